// Command genrequests writes requests for `retrypolicy decide --lines` to standard output.
//
// It writes the same ones on every run, for measuring the command beside
// other tools that read JSON Lines:
//
//	go run ./bench/cmd/genrequests -n 200000 > requests.jsonl
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/retrypolicy/retrypolicy/bench"
)

func main() {
	n := flag.Int("n", 200000, "how many requests to write")
	flag.Parse()
	if *n < 0 {
		fmt.Fprintln(os.Stderr, "genrequests: -n must not be negative")
		os.Exit(2)
	}
	if err := bench.WriteRequests(os.Stdout, *n); err != nil {
		fmt.Fprintln(os.Stderr, "genrequests:", err)
		os.Exit(1)
	}
}
