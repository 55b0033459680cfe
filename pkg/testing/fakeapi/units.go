// Package fakeapi serves, over HTTP, the little of an API server that a
// test of an informer needs.
package fakeapi

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// QueueUnits serves the list and the watch of QueueUnits of every
// namespace, holding the units given (JSON objects with their apiVersion
// and kind), at resourceVersion 5: a watch with sendInitialEvents streams
// them, then the bookmark that ends the list, and stays open. It returns
// the server's URL and how many requests it answered; it stops when t
// ends.
func QueueUnits(t testing.TB, units ...string) (url string, requests *atomic.Int32) {
	t.Helper()
	requests = &atomic.Int32{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/apis/scheduling.x-k8s.io/v1alpha1/queueunits" {
			http.NotFound(w, r)
			return
		}
		requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("watch") != "true" {
			fmt.Fprint(w, `{"apiVersion":"scheduling.x-k8s.io/v1alpha1","kind":"QueueUnitList","metadata":{"resourceVersion":"5"},"items":[`+strings.Join(units, ",")+`]}`)
			return
		}
		if r.URL.Query().Get("sendInitialEvents") == "true" {
			for _, u := range units {
				fmt.Fprintf(w, `{"type":"ADDED","object":%s}`+"\n", u)
			}
			fmt.Fprint(w, `{"type":"BOOKMARK","object":{"apiVersion":"scheduling.x-k8s.io/v1alpha1","kind":"QueueUnit","metadata":{"resourceVersion":"5","annotations":{"k8s.io/initial-events-end":"true"}}}}`+"\n")
		}
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	return srv.URL, requests
}
