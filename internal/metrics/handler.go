package metrics

import (
	"bytes"
	"context"
	"net/http"
	"time"
)

// scrapeTimeout bounds the reads of the GaugeFuncs of one scrape.
const scrapeTimeout = 5 * time.Second

// Handler serves the registry at GET (or HEAD) in the text exposition format.
// A gauge whose read fails is left out of the answer, which is still 200 with the
// other metrics (a scraper then sees that gauge's series go stale, not every
// series), and the failure goes to failed, when it is not nil.
func (r *Registry) Handler(failed func(error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodGet && req.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		ctx, cancel := context.WithTimeout(req.Context(), scrapeTimeout)
		defer cancel()
		var b bytes.Buffer
		if err := r.WriteTo(ctx, &b); err != nil && failed != nil {
			failed(err)
		}
		w.Header().Set("Content-Type", ContentType)
		w.Write(b.Bytes())
	})
}
