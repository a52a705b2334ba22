package jaeger

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
)

func TestOperationsAreReadFromEitherAPISortedWithoutRepeats(t *testing.T) {
	for api, reply := range map[string]string{
		// Jaeger's v3 answer names each operation once per span kind.
		APIv3: `{"operations":[{"name":"db_query","spanKind":"internal"},{"name":"GET /api/detect","spanKind":"server"},{"name":"db_query","spanKind":"client"}]}`,
		APIv1: `{"data":["db_query","GET /api/detect"],"total":2,"limit":0,"offset":0,"errors":null}`,
	} {
		var asked string
		c, _ := client(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			asked = r.URL.RequestURI()
			w.Write([]byte(reply))
		}))
		if err := c.UseAPI(api); err != nil {
			t.Fatal(err)
		}
		ops, err := c.Operations(context.Background(), "nemotron backend")
		if err != nil || !slices.Equal(ops, []string{"GET /api/detect", "db_query"}) {
			t.Errorf("%s: operations %q err %v", api, ops, err)
		}
		want := map[string]string{APIv3: "/api/v3/operations?service=nemotron+backend", APIv1: "/api/services/nemotron%20backend/operations"}[api]
		if asked != want {
			t.Errorf("%s asked %s, want %s", api, asked, want)
		}
	}
}

func TestOperationsOfAServiceJaegerDoesNotKnowAreNone(t *testing.T) {
	c, _ := client(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }))
	if err := c.UseAPI(APIv1); err != nil {
		t.Fatal(err)
	}
	ops, err := c.Operations(context.Background(), "nope")
	if err != nil || ops == nil || len(ops) != 0 {
		t.Errorf("operations %#v err %v, want an empty list", ops, err)
	}
	if _, err := c.Operations(context.Background(), ""); err == nil || !strings.Contains(err.Error(), "needs a service") {
		t.Errorf("no service: %v", err)
	}
}
