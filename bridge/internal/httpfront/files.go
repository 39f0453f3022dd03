package httpfront

import (
	"errors"
	"io/fs"
	"os"
	"slices"
	"sync"
	"time"
)

// What an HTTP session keeps on disk (spec §10): its offloaded streams, their
// tokens, and their removal (downloaded in full, expired, or with the
// session).

// sessionFiles is a session's offloaded streams: its directory (made on
// the first offload, removed with the session) and its tokens.
type sessionFiles struct {
	mu     sync.Mutex
	dir    string
	tokens []string
	closed bool
	budget *heldBudget // MaxSessionOffload, under MaxOffload
}

// download is an execution stream past the inline limit that the HTTP
// front serves from itself (spec §10): a file in its session's directory,
// named by an unguessable token, valid until it has been downloaded in
// full, for DownloadLifetime at most, and while the session lives.
type download struct {
	path, mime string
	name       string // the resource_link's name: the file name a GET suggests
	size       int64
	session    *httpSession
	expiry     *time.Timer // DownloadLifetime
}

// forgetFiles forgets the session's downloads: they get 404 from now on,
// and no new one is made.
func (h *HTTPFront) forgetFiles(s *httpSession) {
	f := &s.files
	f.mu.Lock()
	f.closed = true
	tokens := f.tokens
	f.tokens = nil
	f.mu.Unlock()
	h.mu.Lock()
	for _, t := range tokens {
		if d := h.downloads[t]; d != nil {
			d.expiry.Stop()
		}
		delete(h.downloads, t)
	}
	h.mu.Unlock()
}

// removeDownload forgets one offloaded stream and removes its file, giving
// its bytes back to the offload budgets: it was downloaded in full, or its
// lifetime is over. A GET already streaming it keeps its open file.
func (h *HTTPFront) removeDownload(token string, d *download, why string) {
	f := &d.session.files
	f.mu.Lock()
	h.mu.Lock()
	ok := h.downloads[token] == d
	delete(h.downloads, token)
	h.mu.Unlock()
	if ok {
		f.tokens = slices.DeleteFunc(f.tokens, func(t string) bool { return t == token })
	}
	f.mu.Unlock()
	if !ok { // already gone, with its session or by another GET
		return
	}
	d.expiry.Stop()
	if err := os.Remove(d.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		h.log.Warn("offloaded stream not removed", "path", d.path, "err", err)
	}
	f.budget.credit(int(d.size))
	h.log.Debug("offloaded stream removed", "why", why, "bytes", d.size)
}

// removeFiles removes the session's directory, once its core has finished
// (no offload is under way).
func (h *HTTPFront) removeFiles(s *httpSession) {
	h.forgetFiles(s)
	f := &s.files
	f.mu.Lock()
	dir := f.dir
	f.mu.Unlock()
	if dir != "" {
		if err := os.RemoveAll(dir); err != nil {
			h.log.Warn("offloaded streams not removed", "dir", dir, "err", err)
		}
	}
	f.budget.detach()
}
