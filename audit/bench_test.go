package audit

import (
	"context"
	"testing"
)

func BenchmarkVerify1000(b *testing.B) {
	dir := fill(b, 1000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Verify(dir, VerifyOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppend(b *testing.B) {
	dir := fill(b, 100)
	l, err := Open(dir, testOrigin)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	ev := testEvent(0)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := l.Append(context.Background(), ev); err != nil {
			b.Fatal(err)
		}
	}
}
