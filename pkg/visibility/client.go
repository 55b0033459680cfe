package visibility

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/visibility/api"
)

// Client reads the visibility API, for tools and tests.
type Client struct {
	// BaseURL is the API's root, such as "https://127.0.0.1:8090".
	BaseURL string
	// HTTP is the client to use; nil means http.DefaultClient, which trusts
	// the system's CAs only (HTTPClientTrusting trusts the API's own).
	HTTP *http.Client
	// Token, when set, is sent as a bearer token.
	Token string
}

// HTTPClientTrusting returns an HTTP client that accepts a server
// certificate only when caPEM's certificates sign it: the visibility API's
// certificate itself, or the CA that issued it.
func HTTPClientTrusting(caPEM []byte) (*http.Client, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("no PEM certificate to trust")
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return &http.Client{Transport: transport}, nil
}

// StatusError is an answer other than 200, with the API's message.
type StatusError struct {
	Code    int
	Message string
}

func (e *StatusError) Error() string { return fmt.Sprintf("%d: %s", e.Code, e.Message) }

// Get decodes the JSON answer to path (with its query) into into.
func (c *Client) Get(ctx context.Context, path string, into any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.BaseURL+path, nil)
	if err != nil {
		return err
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	httpClient := c.HTTP
	if httpClient == nil {
		httpClient = http.DefaultClient
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e api.Error
		_ = json.Unmarshal(body, &e)
		return &StatusError{Code: resp.StatusCode, Message: e.Error}
	}
	if err := json.Unmarshal(body, into); err != nil {
		return fmt.Errorf("decoding %s: %w", path, err)
	}
	return nil
}

// Queues is GET /api/queues.
func (c *Client) Queues(ctx context.Context) ([]api.QueueView, error) {
	var out []api.QueueView
	return out, c.Get(ctx, "/api/queues", &out)
}

// QueueUnits is GET /api/queues/{queue}/queueunits; zero values leave a parameter out.
func (c *Client) QueueUnits(ctx context.Context, queue string, phase schedulingv1alpha1.QueueUnitPhase, offset, limit int) (api.QueueUnitList, error) {
	q := url.Values{}
	if phase != "" {
		q.Set("phase", string(phase))
	}
	if offset > 0 {
		q.Set("offset", strconv.Itoa(offset))
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	path := "/api/queues/" + url.PathEscape(queue) + "/queueunits"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var out api.QueueUnitList
	return out, c.Get(ctx, path, &out)
}

// QueueUnit is GET /api/queueunits/{namespace}/{name}.
func (c *Client) QueueUnit(ctx context.Context, namespace, name string) (api.UnitView, error) {
	var out api.UnitView
	return out, c.Get(ctx, "/api/queueunits/"+url.PathEscape(namespace)+"/"+url.PathEscape(name), &out)
}

// Quotas is GET /api/elasticquotas.
func (c *Client) Quotas(ctx context.Context) ([]api.QuotaView, error) {
	var out []api.QuotaView
	return out, c.Get(ctx, "/api/elasticquotas", &out)
}

// WhatIf is GET /api/queues/{queue}/forecast: the forecast of queue's
// waiting units had its ElasticQuota the min and max change gives (amounts
// it leaves out are the quota's own). The caller must be allowed to get
// the queue's ElasticQuota.
func (c *Client) WhatIf(ctx context.Context, queue string, change api.QuotaChange) (api.WhatIf, error) {
	q := url.Values{}
	for name, amount := range change.Min {
		q.Set("min."+string(name), amount.String())
	}
	for name, amount := range change.Max {
		q.Set("max."+string(name), amount.String())
	}
	path := "/api/queues/" + url.PathEscape(queue) + "/forecast"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var out api.WhatIf
	return out, c.Get(ctx, path, &out)
}
