package browsertest

import (
	"os"
	"testing"
	"time"
)

// Firefox returns the path of Firefox ($FIREFOX, or firefox-esr on PATH),
// installing Debian's firefox-esr with apt-get when it is missing. Stock
// Firefox is driven over WebDriver BiDi by npm's puppeteer-core (Playwright
// drives only its own patched Firefox builds): see DriveFirefox.
func Firefox(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("FIREFOX"); p != "" {
		return p
	}
	return Debian(t, "firefox-esr", "firefox-esr")
}

// DriveFirefox is Drive for Firefox: it runs `node driver pageURL
// timeoutMS extra...` in dir with $FIREFOX set to firefox, and decodes the
// one JSON line the driver prints into v. The driver (js/test/firefox.mjs)
// launches a fresh profile of its own, removed when it closes.
func DriveFirefox(t testing.TB, dir, driver, firefox, pageURL string, timeout time.Duration, v any, extra ...string) {
	t.Helper()
	drive(t, dir, driver, "FIREFOX="+firefox, pageURL, timeout, v, extra...)
}
