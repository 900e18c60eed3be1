package retrypolicy

import (
	"math"
	"testing"
)

// relErr is |got - want| / |want| in double-double, as a float64.
func relErr(got, want dd) float64 {
	d := got.sub(want)
	return math.Abs(d.hi+d.lo) / math.Abs(want.hi)
}

// TestExpm1AndLogAgreeWithHighPrecisionValues pins the double-double
// functions the delays of multipliers close to 1 rest on, against values
// computed to 80 digits outside the project for the exact float64 arguments: both within 2^-100 relative.
func TestExpm1AndLogAgreeWithHighPrecisionValues(t *testing.T) {
	const tol = 0x1p-100
	for _, tc := range []struct {
		x    float64
		want dd
	}{
		{1e-05, dd{1.0000050000166668e-05, -3.111926571619883e-22}},
		{0.3, dd{0.3498588075760031, 1.6549155728191776e-17}},
		{1.0, dd{1.7182818284590453, -7.747991575210629e-17}},
		{10.5, dd{36314.502674246636, 1.577797006387782e-12}},
		{43.3, dd{6.381915746994812e+18, 317.20292513223336}},
		{0.34657359, dd{0.4142135619771539, -1.6212946952837727e-17}},
	} {
		if e := relErr(dd{tc.x, 0}.expm1(), tc.want); e > tol {
			t.Errorf("expm1(%v): relative error %g", tc.x, e)
		}
	}
	for _, tc := range []struct {
		m    float64
		want dd
	}{
		{1.5, dd{0.4054651081081644, -2.8811380259626426e-18}},
		{1.000001, dd{9.999994999180668e-07, 1.5807876089699732e-23}},
		{1 + 0x1p-52, dd{2.2204460492503128e-16, 3.649214750845877e-48}},
		{3, dd{1.0986122886681098, -9.07129723500153e-17}},
		{1.0001, dd{9.999500033329732e-05, 1.739121921953736e-21}},
		{1e15, dd{34.538776394910684, 1.184757763427252e-15}},
	} {
		if e := relErr(logDD(tc.m), tc.want); e > tol {
			t.Errorf("log(%v): relative error %g", tc.m, e)
		}
	}
}

func TestFloorOfADoubleDouble(t *testing.T) {
	for _, tc := range []struct {
		x    dd
		want u128
	}{
		{dd{0, 0}, u64(0)},
		{dd{7.5, 0}, u64(7)},
		{dd{8, -1e-20}, u64(7)},
		{dd{8, 1e-20}, u64(8)},
		{dd{0x1p60, -3}, u64(1<<60 - 3)},
		{dd{0x1p60, 100.5}, u64(1<<60 + 100)},
		{dd{0x1p64, -1.5}, u128{0, math.MaxUint64 - 1}},
		{dd{0x1p100, 0}, u128{1 << 36, 0}},
	} {
		if got := tc.x.floor(); got != tc.want {
			t.Errorf("floor(%v + %v) = %v, want %v", tc.x.hi, tc.x.lo, got, tc.want)
		}
	}
}
