// Command codestats prints the size of Voda's code: lines per package (tests
// apart), the longest functions and the largest types by fields and methods.
// Closing notes compare its output before and after a restructuring:
//
//	go run ./hack/codestats [-top 15]
package main

import (
	"cmp"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

type fn struct {
	name  string
	lines int
}

type typ struct {
	name            string
	fields, methods int
}

func main() {
	top := flag.Int("top", 15, "how many functions and types to list")
	flag.Parse()
	fset := token.NewFileSet()
	pkgLines := map[string]int{}
	var fns []fn
	types := map[string]*typ{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		dir := filepath.Dir(path)
		pkgLines[dir] += fset.Position(f.End()).Line
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				name := dir + "." + d.Name.Name
				if d.Recv != nil && len(d.Recv.List) > 0 {
					recv := recvName(d.Recv.List[0].Type)
					name = dir + "." + recv + "." + d.Name.Name
					t := types[dir+"."+recv]
					if t == nil {
						t = &typ{name: dir + "." + recv}
						types[t.name] = t
					}
					t.methods++
				}
				lines := fset.Position(d.End()).Line - fset.Position(d.Pos()).Line + 1
				fns = append(fns, fn{name, lines})
			case *ast.GenDecl:
				for _, s := range d.Specs {
					ts, ok := s.(*ast.TypeSpec)
					if !ok {
						continue
					}
					st, ok := ts.Type.(*ast.StructType)
					if !ok {
						continue
					}
					t := types[dir+"."+ts.Name.Name]
					if t == nil {
						t = &typ{name: dir + "." + ts.Name.Name}
						types[t.name] = t
					}
					for _, f := range st.Fields.List {
						t.fields += max(1, len(f.Names))
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "codestats:", err)
		os.Exit(1)
	}
	dirs := make([]string, 0, len(pkgLines))
	for d := range pkgLines {
		dirs = append(dirs, d)
	}
	slices.SortFunc(dirs, func(a, b string) int {
		return cmp.Or(cmp.Compare(pkgLines[b], pkgLines[a]), cmp.Compare(a, b))
	})
	fmt.Println("== lines per package (without tests)")
	total := 0
	for _, d := range dirs {
		fmt.Printf("%6d  %s\n", pkgLines[d], d)
		total += pkgLines[d]
	}
	fmt.Printf("%6d  total\n", total)
	slices.SortFunc(fns, func(a, b fn) int { return cmp.Or(cmp.Compare(b.lines, a.lines), cmp.Compare(a.name, b.name)) })
	fmt.Printf("\n== the %d longest functions (lines)\n", *top)
	for _, f := range fns[:min(*top, len(fns))] {
		fmt.Printf("%6d  %s\n", f.lines, f.name)
	}
	ts := make([]*typ, 0, len(types))
	for _, t := range types {
		ts = append(ts, t)
	}
	slices.SortFunc(ts, func(a, b *typ) int {
		return cmp.Or(cmp.Compare(b.fields+b.methods, a.fields+a.methods), cmp.Compare(a.name, b.name))
	})
	fmt.Printf("\n== the %d largest types (fields + methods)\n", *top)
	for _, t := range ts[:min(*top, len(ts))] {
		fmt.Printf("%4d fields %4d methods  %s\n", t.fields, t.methods, t.name)
	}
}

func recvName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return recvName(t.X)
	case *ast.IndexExpr:
		return recvName(t.X)
	case *ast.IndexListExpr:
		return recvName(t.X)
	case *ast.Ident:
		return t.Name
	}
	return "?"
}
