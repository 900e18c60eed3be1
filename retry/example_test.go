package retry_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/retry"
	"github.com/retrypolicy/retrypolicy/retryhttp"
)

// A worker calls a rate-limited service: the first answer is a 429 with a
// Retry-After, the second a 503, the third a success. 4xx answers other
// than 429 are permanent; the workers share a retry budget.
func ExampleDo() {
	var calls atomic.Int32
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch calls.Add(1) {
		case 1:
			w.Header().Set("Retry-After-Ms", "50") // a wait asked in ms, as some APIs do
			w.WriteHeader(http.StatusTooManyRequests)
		case 2:
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			fmt.Fprint(w, "report ready")
		}
	}))
	defer server.Close()

	budget, err := retry.NewBudget(0.1, 10) // shared by every worker
	if err != nil {
		panic(err)
	}
	// A fixed backoff, so that the waits do not depend on how long the calls
	// took on this machine: a call's time is its uptime, and uptime credit
	// never takes a fixed delay below its one step.
	strategy := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 5,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: 20 * time.Millisecond}}
	fetch := func(ctx context.Context) (string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, server.URL, nil)
		if err != nil {
			return "", retry.Permanent(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return "", err // the network: retry
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		err = fmt.Errorf("GET: %s", resp.Status)
		switch {
		case resp.StatusCode == http.StatusTooManyRequests:
			wait, _ := retryhttp.WaitAsked(resp.Header, time.Now()) // Retry-After-Ms, or Retry-After
			return "", retry.After(err, wait)                       // never retried sooner
		case resp.StatusCode >= 500:
			return "", err
		case resp.StatusCode >= 400:
			return "", retry.Permanent(err)
		}
		return string(body), nil
	}
	body, err := retry.Do(context.Background(), strategy, fetch,
		retry.WithBudget(budget),
		retry.WithObserver(func(e retry.Event) {
			fmt.Printf("failure %d: %v; retrying after %v\n", e.Failures, e.Err, e.Wait)
		}))
	fmt.Println(body, err)
	// Output:
	// failure 1: GET: 429 Too Many Requests; retrying after 50ms
	// failure 2: GET: 503 Service Unavailable; retrying after 20ms
	// report ready <nil>
}

// The default budget, one a dependency, shared by the calls to it: while
// nothing goes well it grants its burst of 10 retries, then none.
func ExampleDefaultBudget() {
	budget := retry.DefaultBudget()
	granted := 0
	for budget.Withdraw() {
		granted++
	}
	fmt.Println(granted, "retries, then", budget.Tokens())
	// Output: 10 retries, then 0
}

// A simulation (or a scheduler with a clock of its own) gives a windowed
// budget its times: the budget counts its slots from the first, and reads
// no clock.
func ExampleBudget_WithdrawAt() {
	budget, err := retry.NewWindowBudget(20, 10*time.Second, 0)
	if err != nil {
		panic(err)
	}
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 100 { // 100 calls in the first second: 20 retries over 10 s, 2 a second
		budget.StartAt(start.Add(time.Duration(i) * 10 * time.Millisecond))
	}
	for s := range 3 {
		at, granted := start.Add(time.Duration(s)*time.Second), 0
		for budget.WithdrawAt(at) {
			granted++
		}
		fmt.Printf("second %d: granted %d\n", s, granted)
	}
	// Output:
	// second 0: granted 2
	// second 1: granted 2
	// second 2: granted 2
}

// A budget of one retry per ten calls, and two beyond that: a dependency
// that is down sees a bounded extra load, not a storm.
func ExampleNewBudget() {
	budget, err := retry.NewBudget(0.1, 2)
	if err != nil {
		panic(err)
	}
	down := errors.New("connection refused")
	strategy := retrypolicy.Strategy{Kind: retrypolicy.UnlessStopped,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Millisecond}}
	for call := 1; call <= 4; call++ {
		calls := 0
		_, err := retry.Do(context.Background(), strategy, func(context.Context) (int, error) {
			calls++
			return 0, down
		}, retry.WithBudget(budget))
		fmt.Printf("call %d, op run %d×: %v\n", call, calls, err)
	}
	_, err = retry.NewBudget(0.1, 0)
	fmt.Println(err)
	// Output:
	// call 1, op run 3×: retrypolicy: gave up after 3 failures (budget_exhausted): connection refused
	// call 2, op run 1×: retrypolicy: gave up after 1 failure (budget_exhausted): connection refused
	// call 3, op run 1×: retrypolicy: gave up after 1 failure (budget_exhausted): connection refused
	// call 4, op run 1×: retrypolicy: gave up after 1 failure (budget_exhausted): connection refused
	// retrypolicy: NewBudget: burst must be between 1 and 1000000000, got 0
}

// client is the configuration of an adapter of one's own, for
// ExampleAdapterSetting.
type client struct {
	name string
	tags []string
}

// An adapter of one's own takes options as the library's do: a setting
// of one value (WithName), an additive one (WithTag), and the loop's own
// options beside them, returned for New. A setting of one value given
// twice, or another adapter's option, is refused, naming it.
func ExampleAdapterSetting() {
	withName := retry.NewAdapterSetting[client]("mine.WithName")
	withTag := retry.NewAdditiveSetting[client]("mine.WithTag")
	name := func(n string) retry.Option { return withName.Option(func(c *client) { c.name = n }) }
	tag := func(t string) retry.Option { return withTag.Option(func(c *client) { c.tags = append(c.tags, t) }) }

	var c client
	loopOpts, err := retry.ApplyAdapterOptions(&c, []retry.Option{name("billing"), tag("a"), retry.WithFullJitter(), tag("b")})
	fmt.Println(c.name, c.tags, len(loopOpts), err)
	_, err = retry.ApplyAdapterOptions(&c, []retry.Option{name("a"), name("b")})
	fmt.Println(err)
	_, err = retry.New[int](retrypolicy.Default(), name("billing"))
	fmt.Println(err)
	// Output:
	// billing [a b] 1 <nil>
	// mine.WithName: given twice; give each setting once
	// mine.WithName is an option of mine, not of this loop
}

// Each attempt has a deadline of its own: an attempt that hangs is ended
// after 50 ms and retried, while the call's context lives.
func ExampleWithAttemptTimeout() {
	strategy := retrypolicy.Strategy{Kind: retrypolicy.Bounded, MaxAttempts: 3, Window: time.Minute,
		Backoff: retrypolicy.Backoff{Kind: retrypolicy.Fixed, BaseDelay: time.Millisecond}}
	attempts := 0
	v, err := retry.Do(context.Background(), strategy, func(ctx context.Context) (string, error) {
		if attempts++; attempts == 1 {
			<-ctx.Done() // a call that hangs, until its attempt's deadline
			return "", ctx.Err()
		}
		return "done", nil
	}, retry.WithAttemptTimeout(50*time.Millisecond))
	fmt.Println(v, err, attempts)
	// Output:
	// done <nil> 2
}
