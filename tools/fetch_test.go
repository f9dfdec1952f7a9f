package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/tools"
)

// prepareWithin prepares a file call that must be settled within a few
// seconds: a refused address is refused before any connection is tried, while
// one that is tried waits out the deadline.
func prepareWithin(t *testing.T, r tools.Reader, file string) (action.Payload, error) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	raw, _ := json.Marshal(map[string]string{"chat_id": "222", "file": file})
	return r.PrepareFrom(ctx, raw, nil)
}

// Every address that is not public is refused with files.fetch_private off,
// not only loopback: private, shared (carrier-grade NAT, Alibaba Cloud's
// metadata), link-local (the metadata services), the IETF's and the
// benchmarks' blocks, and IPv6 forms that carry an IPv4 address (NAT64,
// 6to4, IPv4-mapped, IPv4-compatible) of a metadata address.
func TestAFetchRefusesEveryAddressThatIsNotPublic(t *testing.T) {
	_, document := fileTools(t, policy.Files{})
	for _, host := range []string{
		"10.0.0.1", "172.16.0.1", "192.168.1.1",
		"169.254.169.254",      // AWS, GCP, Azure metadata
		"100.100.100.200",      // Alibaba Cloud metadata, in 100.64.0.0/10
		"100.64.0.1",           // carrier-grade NAT, Tailscale
		"192.0.0.192",          // Oracle's old metadata address, in 192.0.0.0/24
		"198.18.0.1",           // benchmarking
		"0.0.0.0",              // this host
		"240.0.0.1",            // reserved
		"[fd00:ec2::254]",      // AWS metadata over IPv6 (unique local)
		"[fe80::1]",            // link-local
		"[64:ff9b::a9fe:a9fe]", // NAT64 of 169.254.169.254
		"[2002:a9fe:a9fe::1]",  // 6to4 of 169.254.169.254
		"[::ffff:a9fe:a9fe]",   // IPv4-mapped 169.254.169.254
		"[::a9fe:a9fe]",        // IPv4-compatible 169.254.169.254
		"[2001:db8::1]",        // documentation
	} {
		_, err := prepareWithin(t, document, "http://"+host+"/latest/meta-data/")
		var ae *tools.ArgsError
		if !errors.As(err, &ae) || !strings.Contains(err.Error(), "private address") {
			t.Errorf("%s: %v, want a refusal as a private address", host, err)
		}
	}
}

// PublicAddress refuses what is not public and passes what is: a check that
// refused everything would pass the test above.
func TestPublicAddressTellsPublicFromSpecialPurpose(t *testing.T) {
	for addr, public := range map[string]bool{
		"8.8.8.8": true, "1.1.1.1": true, "2606:4700:4700::1111": true, "2a00:1450:4001::200e": true,
		"64:ff9b::808:808": true, "::ffff:8.8.8.8": true, // NAT64 and IPv4-mapped forms of 8.8.8.8
		"100.100.100.200": false, "64:ff9b::a64:6464": false, "::ffff:10.0.0.1": false, "fe80::1%eth0": false,
		"2002:808:808::1": false, "::808:808": false, // 6to4 and IPv4-compatible: deprecated, refused whole
		"255.255.255.255": false, "224.0.0.1": false, "ff02::1": false, "::1": false, "::": false,
	} {
		err := tools.PublicAddress(netip.MustParseAddr(addr))
		if got := err == nil; got != public {
			t.Errorf("PublicAddress(%s) = %v, want public %v", addr, err, public)
		}
		if err != nil && !errors.Is(err, tools.ErrPrivateAddress) {
			t.Errorf("PublicAddress(%s) = %v, want ErrPrivateAddress", addr, err)
		}
	}
}

// A fetch follows three redirects and refuses a fourth.
func TestAFetchFollowsThreeRedirectsAndRefusesAFourth(t *testing.T) {
	img := pngBytes(t, 4, 4)
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n int
		if _, err := fmt.Sscanf(r.URL.Path, "/hops/%d", &n); err == nil && n > 0 {
			http.Redirect(w, r, fmt.Sprintf("/hops/%d", n-1), http.StatusFound)
			return
		}
		_, _ = w.Write(img)
	}))
	defer web.Close()
	_, document := fileTools(t, policy.Files{FetchPrivate: true})
	if _, err := prepareWithin(t, document, web.URL+"/hops/3"); err != nil {
		t.Errorf("three redirects: %v", err)
	}
	_, err := prepareWithin(t, document, web.URL+"/hops/4")
	var ae *tools.ArgsError
	if !errors.As(err, &ae) || !strings.Contains(err.Error(), "more than 3 redirects") {
		t.Errorf("four redirects: %v, want a refusal", err)
	}
}

// A proxy named by the environment is never used by a fetch: it would reach
// for the bot the addresses the check refuses (only the proxy's own address
// would be checked). A proxy named by files.fetch_proxy is.
func TestAProxyInTheEnvironmentIsNotUsedByAFetch(t *testing.T) {
	var proxied atomic.Int32
	img := pngBytes(t, 4, 4)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied.Add(1)
		_, _ = w.Write(img)
	}))
	defer proxy.Close()
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("HTTPS_PROXY", proxy.URL)
	t.Setenv("http_proxy", proxy.URL)
	t.Setenv("https_proxy", proxy.URL)
	t.Setenv("NO_PROXY", "")
	t.Setenv("no_proxy", "")

	// The environment is read once per process by net/http, so the client's
	// transport is checked as well as what it does.
	for _, private := range []bool{false, true} {
		tr, ok := tools.FetchClient(policy.Files{FetchPrivate: private}).Transport.(*http.Transport)
		if !ok || tr.Proxy != nil {
			t.Errorf("fetch_private %v: the transport takes a proxy with no fetch_proxy", private)
		}
	}
	_, document := fileTools(t, policy.Files{})
	if _, err := prepareWithin(t, document, "http://169.254.169.254/latest/meta-data/"); err == nil || !strings.Contains(err.Error(), "private address") {
		t.Errorf("the metadata address with a proxy in the environment: %v, want a refusal", err)
	}
	_, document = fileTools(t, policy.Files{FetchPrivate: true})
	_, _ = prepareWithin(t, document, "http://203.0.113.7/chart.png") // documentation space: unreachable
	if n := proxied.Load(); n != 0 {
		t.Fatalf("the proxy in the environment was asked %d times", n)
	}

	_, document = fileTools(t, policy.Files{FetchProxy: proxy.URL})
	if _, err := prepareWithin(t, document, "http://169.254.169.254/latest/meta-data/"); err != nil || proxied.Load() != 1 {
		t.Errorf("through files.fetch_proxy: %v, proxy asked %d times, want once", err, proxied.Load())
	}
}
