package fleet_test

import (
	"context"
	"fmt"
	"time"

	"github.com/retrypolicy/retrypolicy/fleet"
)

// Retries multiply down a call chain: four layers of three attempts each
// send 81 calls a request to a bottom that is down; the client alone
// retrying sends 3.
func ExampleLayers() {
	for _, c := range fleet.DocumentedChains()[:2] {
		l := fleet.Layers{Layers: c.Layers, Rate: 10, Duration: 10 * time.Second, Down: time.Hour, Horizon: time.Minute}
		r, err := l.Run(context.Background())
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s: %d requests, %.0f calls each at the bottom, attempts by layer %v\n", c.Name, r.Requests, r.Amplification, r.Attempts)
	}
	// Output:
	// every-layer: 100 requests, 81 calls each at the bottom, attempts by layer [300 900 2700 8100]
	// client-only: 100 requests, 3 calls each at the bottom, attempts by layer [300 300 300 300]
}
