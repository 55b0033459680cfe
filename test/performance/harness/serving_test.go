package harness

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

func TestWaitServingWaitsForTheVisibilityAPIToAnswer(t *testing.T) {
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if asked.Add(1) < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_ = json.NewEncoder(w).Encode([]any{})
	}))
	defer srv.Close()
	if !waitServing(context.Background(), func() string { return srv.URL }) {
		t.Fatal("waitServing = false, want true once the API answers")
	}
	if got := asked.Load(); got != 3 {
		t.Errorf("asked %d times, want 3 (twice unanswered, then answered)", got)
	}
}

func TestWaitServingGivesUpWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if waitServing(ctx, func() string { return "" }) {
		t.Error("waitServing = true with no koord-queue and its context over, want false")
	}
}
