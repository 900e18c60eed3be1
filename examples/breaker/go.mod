module github.com/retrypolicy/retrypolicy/examples/breaker

go 1.26

require github.com/retrypolicy/retrypolicy v0.1.0

require github.com/sony/gobreaker/v2 v2.4.0

// For development in a checkout of the repository; a user's build ignores
// these lines.
replace github.com/retrypolicy/retrypolicy => ../..
