package vet

import (
	"go/ast"
	"go/types"
)

// makesAdapterOption is the fact of a function that returns an adapter's
// own option (one made by a retry.AdapterSetting): the package of the
// adapter that takes it, and the function's name as a user writes it.
type makesAdapterOption struct {
	Pkg  string // the adapter's import path
	Name string // "retryhttp.WithClassifier"
}

// AFact marks makesAdapterOption as a fact.
func (*makesAdapterOption) AFact() {}

func (f *makesAdapterOption) String() string { return "makes an option of " + f.Pkg }

// markOptionMakers exports the fact of each of the package's functions
// that returns an option of an AdapterSetting's, and records the adapter
// packages seen, this one's and its dependencies'.
func (c *checker) markOptionMakers() {
	c.adapters = map[string]bool{}
	for _, f := range c.pass.AllObjectFacts() {
		if m, ok := f.Fact.(*makesAdapterOption); ok {
			c.adapters[m.Pkg] = true
		}
	}
	for fn, decl := range c.decls {
		if sig := fn.Signature(); sig.Recv() != nil || sig.Results().Len() != 1 || !isNamed(sig.Results().At(0).Type(), retryPath, "Option") {
			continue
		}
		if c.makesAdapterOption(decl.Body) {
			c.pass.ExportObjectFact(fn, &makesAdapterOption{Pkg: c.pass.Pkg.Path(), Name: c.pass.Pkg.Name() + "." + fn.Name()})
			c.adapters[c.pass.Pkg.Path()] = true
		}
	}
}

// makesAdapterOption reports whether body calls an AdapterSetting's
// Option method.
func (c *checker) makesAdapterOption(body *ast.BlockStmt) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok && !found {
			fn := c.callee(call)
			found = isFunc(fn, retryPath, "Option") && fn.Signature().Recv() != nil &&
				isNamed(fn.Signature().Recv().Type(), retryPath, "AdapterSetting")
		}
		return !found
	})
	return found
}

// foreignOptions reports each adapter's option given, in a call's list of
// options, to a loop that refuses it when it runs: retry.Do, retry.New or
// a Loop's With (which take the loop's own options), or a function of
// another adapter's package that takes options.
func (c *checker) foreignOptions(call *ast.CallExpr, fn *types.Func) {
	opts := optionArgs(call, fn)
	if opts == nil {
		return
	}
	target := fn.Pkg().Path()
	loop := target == retryPath
	if !loop && !c.adapters[target] {
		return // a function of the user's: what it does with the options is its own
	}
	for _, opt := range opts {
		var f makesAdapterOption
		made := c.callee(opt)
		if made == nil || !c.pass.ImportObjectFact(made, &f) || f.Pkg == target {
			continue
		}
		c.report(opt, "foreign-option", f.Name+" is an option of "+f.Pkg+", which "+fn.Pkg().Name()+"."+fn.Name()+
			" refuses when it runs: give it to "+f.Pkg+"'s own constructor, or say the setting with the loop's option")
	}
}

// optionArgs returns the options a call gives, as calls, in its list of
// retry.Options (a function's last, variadic parameter): nil when fn takes
// none, or the list is spread with ..., which is not followed.
func optionArgs(call *ast.CallExpr, fn *types.Func) []*ast.CallExpr {
	sig := fn.Signature()
	if !sig.Variadic() || call.Ellipsis.IsValid() || len(call.Args) < sig.Params().Len() || fn.Pkg() == nil {
		return nil
	}
	last := sig.Params().At(sig.Params().Len() - 1).Type().(*types.Slice)
	if !isNamed(last.Elem(), retryPath, "Option") {
		return nil
	}
	opts := []*ast.CallExpr{}
	for _, arg := range call.Args[sig.Params().Len()-1:] {
		if opt, ok := ast.Unparen(arg).(*ast.CallExpr); ok {
			opts = append(opts, opt)
		}
	}
	return opts
}
