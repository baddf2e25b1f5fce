package audit

import "testing"

func BenchmarkVerify1000(b *testing.B) {
	dir := fill(b, 1000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Verify(dir, VerifyOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
