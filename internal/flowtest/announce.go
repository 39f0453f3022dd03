package flowtest

import (
	"bufio"
	"io"
	"strings"
)

// Announcement reads mcp-flow-server's stdout up to its URL and
// certificate hash ("" when it ends before them).
func Announcement(stdout io.Reader) (url, hash string) {
	sc := bufio.NewScanner(stdout)
	for (url == "" || hash == "") && sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ": ")
		switch k {
		case "url":
			url = v
		case "cert-sha256":
			hash = v
		}
	}
	return url, hash
}
