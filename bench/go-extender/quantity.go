package main

import (
	"fmt"
	"math"
	"math/big"
	"strings"
)

// Quantity is a Kubernetes resource quantity ("3920m", "65807716Ki", "1e3"). Like
// resource.Quantity it is parsed once, when the JSON is decoded, and written back as the
// text it was read from.
type Quantity struct {
	text  string
	milli int64 // the value in thousandths, rounded up, saturated at the int64 range
}

// MilliValue is the value in thousandths: millicores for cpu.
func (q Quantity) MilliValue() int64 { return q.milli }

func (q Quantity) String() string { return q.text }

// UnmarshalJSON reads the quoted string (or a bare number) in place, as resource.Quantity
// does, rather than through a nested json.Unmarshal.
func (q *Quantity) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		*q = Quantity{}
		return nil
	}
	if n := len(data); n >= 2 && data[0] == '"' && data[n-1] == '"' {
		data = data[1 : n-1]
	}
	text := strings.TrimSpace(string(data))
	milli, err := ParseMillis(text)
	if err != nil {
		return err
	}
	q.text, q.milli = text, milli
	return nil
}

func (q Quantity) MarshalJSON() ([]byte, error) {
	out := make([]byte, 0, len(q.text)+2)
	out = append(out, '"')
	out = append(out, q.text...)
	return append(out, '"'), nil
}

var decimalSuffixes = map[string]int{"m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
var binarySuffixes = map[string]uint{"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}

// ParseMillis reads a quantity as thousandths of its unit, rounding up as MilliValue does.
func ParseMillis(s string) (int64, error) {
	bad := fmt.Errorf("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': %q", s)
	i, negative := 0, false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		negative = s[i] == '-'
		i++
	}
	var mant int64
	digits, fraction, seenDot := 0, 0, false
	for ; i < len(s); i++ {
		c := s[i]
		if c == '.' && !seenDot {
			seenDot = true
		} else if c >= '0' && c <= '9' {
			digits++
			if digits <= 18 {
				mant = mant*10 + int64(c-'0')
			}
			if seenDot {
				fraction++
			}
		} else {
			break
		}
	}
	if digits == 0 {
		return 0, bad
	}
	number, suffix := s[:i], s[i:]
	exp10, exp2 := 0, uint(0)
	if e, ok := decimalSuffixes[suffix]; ok {
		exp10 = e
	} else if e, ok := binarySuffixes[suffix]; ok {
		exp2 = e
	} else if len(suffix) > 1 && (suffix[0] == 'e' || suffix[0] == 'E') {
		if _, err := fmt.Sscanf(suffix[1:], "%d", &exp10); err != nil || strings.ContainsAny(suffix[1:], " .") {
			return 0, bad
		}
	} else {
		return 0, bad
	}
	if digits <= 18 {
		if milli, ok := fastMillis(mant, negative, exp10+3-fraction, exp2); ok {
			return milli, nil
		}
	}
	return slowMillis(number, exp10, exp2)
}

// fastMillis computes mant * 10^shift * 2^exp2 in int64 arithmetic, the everyday case
// ("3920m", "16", "65807716Ki"); ok is false when that could overflow.
func fastMillis(mant int64, negative bool, shift int, exp2 uint) (milli int64, ok bool) {
	if shift < -18 || exp2 > 62 {
		return 0, false
	}
	for ; shift > 0; shift-- {
		if mant > math.MaxInt64/10 {
			return 0, false
		}
		mant *= 10
	}
	if mant > math.MaxInt64>>exp2 {
		return 0, false
	}
	mant <<= exp2
	var div int64 = 1
	for ; shift < 0; shift++ {
		div *= 10
	}
	milli = mant / div
	if negative {
		return -milli, true // toward zero is up for a negative value
	}
	if mant%div != 0 {
		milli++ // round up, as MilliValue does
	}
	return milli, true
}

func slowMillis(number string, exp10 int, exp2 uint) (int64, error) {
	r, ok := new(big.Rat).SetString(number)
	if !ok {
		return 0, fmt.Errorf("quantity: bad number %q", number)
	}
	r.Mul(r, big.NewRat(1000, 1))
	if exp2 > 0 {
		r.Mul(r, new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), exp2)))
	}
	pow := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(abs(exp10))), nil)
	if exp10 >= 0 {
		r.Mul(r, new(big.Rat).SetInt(pow))
	} else {
		r.Quo(r, new(big.Rat).SetInt(pow))
	}
	q, m := new(big.Int).QuoRem(r.Num(), r.Denom(), new(big.Int))
	if m.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	switch {
	case q.IsInt64():
		return q.Int64(), nil
	case q.Sign() > 0:
		return math.MaxInt64, nil
	default:
		return math.MinInt64, nil
	}
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
