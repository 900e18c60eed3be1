module example.com/vettest

go 1.26.0

require github.com/retrypolicy/retrypolicy v0.1.0

replace github.com/retrypolicy/retrypolicy => ../..
