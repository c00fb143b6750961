package main

import "testing"

func TestParseMillis(t *testing.T) {
	cases := []struct {
		in   string
		want int64
	}{
		{"3920m", 3920},
		{"16", 16000},
		{"0.5", 500},
		{"1.0005", 1001},
		{"0.1m", 1},
		{"65807716Ki", 65807716 * 1024 * 1000},
		{"1e3", 1000000},
		{"1E", 9223372036854775807},
		{"100M", 100000000000},
		{"95551679124", 95551679124000},
		{"-1", -1000},
	}
	for _, c := range cases {
		got, err := ParseMillis(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseMillis(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "m", "1x", "1e", "abc", "1.2.3"} {
		if _, err := ParseMillis(bad); err == nil {
			t.Errorf("ParseMillis(%q) succeeded; want an error", bad)
		}
	}
}
