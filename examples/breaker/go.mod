module github.com/retrypolicy/retrypolicy/examples/breaker

go 1.26

require github.com/retrypolicy/retrypolicy v0.0.0

require github.com/sony/gobreaker/v2 v2.4.0

replace github.com/retrypolicy/retrypolicy => ../..
