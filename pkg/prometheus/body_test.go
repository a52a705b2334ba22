package prometheus

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/goroutines"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// heldPrometheus answers range queries and label values, each request held until release is
// closed, and counts the requests that reach it by path and form.
type heldPrometheus struct {
	release chan struct{}
	mu      sync.Mutex
	calls   map[string]int
	total   atomic.Int32
}

func (p *heldPrometheus) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	p.calls[r.URL.Path+"?"+r.Form.Encode()]++
	p.mu.Unlock()
	p.total.Add(1)
	select {
	case <-p.release:
	case <-r.Context().Done():
		return
	}
	switch r.URL.Path {
	case "/api/v1/query_range":
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"gpu":"0","query":%q},"values":[[1700000000,"1.5"],[1700000015,"2.5"]]}]}}`, r.Form.Get("query"))
	case "/api/v1/label/gpu/values":
		fmt.Fprint(w, `{"status":"success","data":["0","1"]}`)
	default:
		http.NotFound(w, r)
	}
}

// Panels and joins asking Prometheus the same query at once send it once; a different query is
// its own request; every caller gets the whole answer, decoded for it alone (a caller that
// changes its series, as splitParts does, changes no other's). Asked again after the reply, the
// query goes to Prometheus again: nothing is kept.
func TestSameRequestsAtOnceAskPrometheusOnce(t *testing.T) {
	p := &heldPrometheus{release: make(chan struct{}), calls: map[string]int{}}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		select {
		case <-p.release:
		default:
			close(p.release)
		}
	})
	c, err := New(models.Upstream{Name: models.Prometheus, URL: srv.URL}, srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	r := promv1.Range{Start: time.Unix(1700000000, 0), End: time.Unix(1700000015, 0), Step: 15 * time.Second}
	queryRange := func(q string) (model.Matrix, error) {
		v, _, _, err := c.api.QueryRange(ctx, q, r)
		if err != nil {
			return nil, err
		}
		return v.(model.Matrix), nil
	}

	const same = 4
	matrices := make([]model.Matrix, same+1)
	values := make([]model.LabelValues, 2)
	errs := make([]error, len(matrices)+len(values))
	var wg sync.WaitGroup
	for i := range same {
		wg.Go(func() { matrices[i], errs[i] = queryRange("up") })
	}
	wg.Go(func() { matrices[same], errs[same] = queryRange("down") })
	for i := range values {
		wg.Go(func() { values[i], _, _, errs[len(matrices)+i] = c.api.LabelValues(ctx, "gpu", nil, r.Start, r.End) })
	}
	goroutines.WaitIn(t, "prometheus.shareSend[", len(errs))
	close(p.release)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("caller %d: %v", i, err)
		}
	}
	if n := p.total.Load(); n != 3 {
		t.Errorf("%d requests reached Prometheus for 2 queries and one label's values: %v", n, p.calls)
	}
	for i, m := range matrices {
		want := "up"
		if i == same {
			want = "down"
		}
		if len(m) != 1 || string(m[0].Metric["query"]) != want || len(m[0].Values) != 2 {
			t.Fatalf("caller %d got %v", i, m)
		}
	}
	for i, v := range values {
		if len(v) != 2 || v[0] != "0" || v[1] != "1" {
			t.Errorf("label values caller %d got %v", i, v)
		}
	}
	// Each caller decoded the reply for itself.
	delete(matrices[0][0].Metric, "gpu")
	matrices[0][0].Values[0].Value = 99
	for i, m := range matrices[1:same] {
		if m[0].Metric["gpu"] != "0" || m[0].Values[0].Value != 1.5 {
			t.Errorf("caller %d sees caller 0's changes: %v", i+1, m)
		}
	}

	if _, err := queryRange("up"); err != nil {
		t.Fatal(err)
	}
	if n := p.total.Load(); n != 4 {
		t.Errorf("asked again after the reply, %d requests in all reached Prometheus, want 4", n)
	}
}
