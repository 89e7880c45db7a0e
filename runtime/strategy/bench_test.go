package strategy

import "testing"

// BenchmarkNext is one Next call per family with its default parameters.
func BenchmarkNext(b *testing.B) {
	bars := walk(100000)
	for _, f := range Families() {
		b.Run(string(f), func(b *testing.B) {
			st := mustNew(b, spec(f, f.Defaults()))
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				st.Next(bars[i])
				i++
				if i == len(bars) {
					i = 0
				}
			}
		})
	}
}
