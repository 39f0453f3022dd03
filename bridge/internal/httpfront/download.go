package httpfront

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"
)

// Execution streams past the inline limit (spec §10): offloaded by an HTTP
// session (front.offload) and served back by the front as downloads.

// offload writes a large execution stream to a file of the session and
// returns the front's URL for it: a GET of
// <endpoint>?download=<token> streams it back (http.ServeContent) until
// the session ends, then gets 404. The bytes count against
// MaxSessionOffload and MaxOffload; past either the stream fails (and the
// call with it) and nothing is kept.
func (s *httpSession) Offload(_ context.Context, name, mime string, r io.Reader) (string, int64, error) {
	h := s.front
	f := &s.files
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return "", 0, errors.New("the HTTP session ended")
	}
	if f.dir == "" {
		dir, err := os.MkdirTemp(h.cfg.Stdio.StreamDir, "mcp-flow-http-*")
		if err != nil {
			f.mu.Unlock()
			return "", 0, err
		}
		f.dir = dir
	}
	dir := f.dir
	f.mu.Unlock()
	token := newSessionID()
	path := filepath.Join(dir, token)
	out, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return "", 0, err
	}
	n, err := io.Copy(&budgetWriter{w: out, b: f.budget, front: h}, r)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		f.budget.credit(int(n))
		return "", 0, err
	}
	f.mu.Lock()
	if f.closed { // the session ended meanwhile
		f.mu.Unlock()
		os.Remove(path)
		f.budget.credit(int(n))
		return "", 0, errors.New("the HTTP session ended")
	}
	f.tokens = append(f.tokens, token)
	d := &download{path: path, mime: mime, name: name, size: n, session: s}
	h.mu.Lock() // under f.mu: forgetFiles sees the token, or offload sees closed
	h.downloads[token] = d
	d.expiry = time.AfterFunc(h.cfg.DownloadLifetime, func() { h.removeDownload(token, d, "its lifetime (DownloadLifetime) is over") })
	h.mu.Unlock()
	f.mu.Unlock()
	return s.base + "?download=" + url.QueryEscape(token), n, nil
}

// budgetWriter charges what it writes to a budget.
type budgetWriter struct {
	w     io.Writer
	b     *heldBudget
	front *HTTPFront
}

func (bw *budgetWriter) Write(p []byte) (int, error) {
	if !bw.b.take(len(p)) {
		h := bw.front
		return 0, fmt.Errorf("offloaded streams over their cap (%d bytes per session, MaxSessionOffload; %d in all, MaxOffload)", h.cfg.MaxSessionOffload, h.cfg.MaxOffload)
	}
	n, err := bw.w.Write(p)
	bw.b.credit(len(p) - n)
	return n, err
}

// serveDownload answers a GET of an offloaded stream: its bytes, streamed
// from its file (ranges allowed), or 404 for a token no live session has.
func (h *HTTPFront) serveDownload(w http.ResponseWriter, r *http.Request, token string) {
	h.mu.Lock()
	d := h.downloads[token]
	h.mu.Unlock()
	if d == nil || !h.owns(d.session, r) { // another subject's download is none of r's
		http.Error(w, "unknown download, or its session ended", http.StatusNotFound)
		return
	}
	defer d.session.enter()()
	file, err := os.Open(d.path)
	if err != nil { // removed as its session ended
		http.Error(w, "unknown download, or its session ended", http.StatusNotFound)
		return
	}
	defer file.Close()
	if d.mime != "" {
		w.Header().Set("Content-Type", d.mime)
	}
	w.Header().Set("Cache-Control", "no-store")
	if d.name != "" { // saved under the link's name (curl -OJ, a browser), not the endpoint's "mcp"
		w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": d.name}))
	}
	cw := &countingWriter{ResponseWriter: w}
	http.ServeContent(cw, r, "", time.Time{}, file)
	if r.Header.Get("Range") == "" && cw.n == d.size {
		h.removeDownload(token, d, "downloaded in full")
	}
}

// countingWriter counts the body bytes a handler wrote.
type countingWriter struct {
	http.ResponseWriter
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.ResponseWriter.Write(p)
	c.n += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection.
func (c *countingWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }
