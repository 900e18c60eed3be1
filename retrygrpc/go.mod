module github.com/retrypolicy/retrypolicy/retrygrpc

go 1.26.0

require (
	github.com/retrypolicy/retrypolicy v0.1.0
	github.com/stretchr/testify v1.12.1
	google.golang.org/grpc v1.85.0
	google.golang.org/protobuf v1.36.12
)

require (
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1 // indirect
)

// For development in a checkout of the repository; a user's build ignores
// these lines.
replace github.com/retrypolicy/retrypolicy => ../
