package httpapi_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/retrypolicy/retrypolicy/httpapi"
)

// The API mounted under a prefix on a program's own mux, asked to
// validate a strategy by a plain client.
func ExampleNew() {
	mux := http.NewServeMux()
	mux.Handle("/retrypolicy/", http.StripPrefix("/retrypolicy", httpapi.New(httpapi.Options{})))

	req := httptest.NewRequest("POST", "http://localhost/retrypolicy/v1/validate", strings.NewReader(`{"strategy": "bounded", "max_attempts": 5}`))
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, req)
	fmt.Print(w.Code, " ", w.Body.String())

	req = httptest.NewRequest("POST", "http://localhost/retrypolicy/v1/simulate?jobs=2000000", strings.NewReader(`null`))
	w = httptest.NewRecorder()
	mux.ServeHTTP(w, req)
	fmt.Print(w.Code, " ", w.Body.String())
	// Output:
	// 200 {"strategy":"bounded","max_attempts":5,"window_secs":3600,"backoff":{"kind":"exponential","base_delay_secs":1,"multiplier":2.0,"max_delay_secs":3600}}
	// 400 {"error_code":"INVALID_PARAMETER","error_message":"jobs: must be between 1 and 100000, got 2000000","errors":[{"field":"jobs","message":"jobs: must be between 1 and 100000, got 2000000"}]}
}
