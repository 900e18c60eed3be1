module github.com/retrypolicy/retrypolicy/bench

go 1.26

require (
	github.com/cenkalti/backoff/v5 v5.0.3
	github.com/retrypolicy/retrypolicy v0.0.0
	github.com/stretchr/testify v1.12.1
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect

replace github.com/retrypolicy/retrypolicy => ../
