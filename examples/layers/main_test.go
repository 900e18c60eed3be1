package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// memory is a network in memory: a transport serves each request with its
// handler, from a context of the server's own, as a server would.
type memory struct{ n int }

func (m *memory) serve(h http.Handler) (string, http.RoundTripper) {
	m.n++
	return "http://service" + string(rune('0'+m.n)) + ".test/", roundTrip(func(req *http.Request) (*http.Response, error) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req.Clone(context.Background()))
		return rec.Result(), nil
	})
}

func (m *memory) close() { m.n = 0 }

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// within reports whether got is within a tenth of want.
func within(got, want int) bool {
	d := got - want
	return d*10 <= want && -d*10 <= want
}

// TestTheChainIsWhatTheSimulationSays: the chain of real retryhttp
// transports and handlers, on a fake clock, through an outage of half the
// run, makes the calls at the bottom and the successes fleet.Layers
// simulates for the same chain, rate, outage and strategies, within 10%,
// with the rule (and the default budgets) and without either: 1 call a
// request during the outage with it, plus the lowest layer's burst of 10
// retries; about 81 without.
func TestTheChainIsWhatTheSimulationSays(t *testing.T) {
	s := settings{rate: 100, duration: 2 * time.Second, down: time.Second}
	for _, rule := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			real, err := runChain(&memory{}, s, rule)
			require.NoError(t, err)
			sim, err := simulate(s, rule)
			require.NoError(t, err)
			t.Logf("rule %v: real %+v; simulated %d requests, %d bottom calls, %d succeeded", rule, real, sim.Requests, sim.BottomCalls, sim.Succeeded)
			assert.Equal(t, sim.Requests, real.requests)
			assert.True(t, within(real.bottom, sim.BottomCalls), "rule %v: bottom calls %d, simulated %d", rule, real.bottom, sim.BottomCalls)
			assert.True(t, within(real.succeeded, sim.Succeeded), "rule %v: succeeded %d, simulated %d", rule, real.succeeded, sim.Succeeded)
			down := int(s.rate * s.down.Seconds())
			if rule {
				// The lowest layer retries, under its host's default budget:
				// its burst of 10 retries, then none while nothing ends well.
				assert.Equal(t, down+10+(real.requests-down), real.bottom, "1 call a request and the burst while down, 1 after")
			} else {
				assert.Greater(t, real.bottom, 70*down, "about 81 calls a request while down")
			}
		})
	}
}

// TestItPrints: the program's table names both runs and both sides.
func TestItPrints(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out strings.Builder
		require.NoError(t, run(&out, &memory{}, settings{rate: 20, duration: time.Second, down: 500 * time.Millisecond}))
		for _, want := range []string{"one layer (default)", "every layer retrying", "real", "simulated", "/request"} {
			assert.Contains(t, out.String(), want)
		}
	})
}
