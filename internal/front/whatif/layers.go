package whatif

import (
	"strconv"

	"github.com/retrypolicy/retrypolicy"
	"github.com/retrypolicy/retrypolicy/fleet"
)

// ChainOf is the chain of four layers (a client, a gateway, a service, a database driver), each retrying under the
// strategy of its own in strategies (top first), as given one a layer.
func ChainOf(name string, strategies []retrypolicy.Strategy) fleet.Chain {
	layers := make([]fleet.Layer, len(strategies))
	seed := fleet.DefaultLayers(3) // the chain's names and hop
	for i, s := range strategies {
		layers[i] = fleet.Layer{Name: "layer " + strconv.Itoa(i+1), Strategy: s, Latency: seed[0].Latency}
		if len(strategies) == len(seed) {
			layers[i].Name = seed[i].Name
		}
	}
	return fleet.Chain{Name: name, Layers: layers}
}
