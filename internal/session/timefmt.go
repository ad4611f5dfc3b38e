package session

import "strconv"

// formatDeadline renders Unix milliseconds as an RFC 3339 UTC time with
// millisecond precision ("2026-11-29T10:57:46.123Z"), or "" for zero. It is
// computed here, without the time package, to keep the state machine pure.
func formatDeadline(ms int64) string {
	if ms == 0 {
		return ""
	}
	secs := floorDiv(ms, 1000)
	frac := ms - secs*1000
	days := floorDiv(secs, 86400)
	rem := secs - days*86400
	y, m, d := civilFromDays(days)
	b := make([]byte, 0, 24)
	b = appendInt(b, y, 4)
	b = append(b, '-')
	b = appendInt(b, m, 2)
	b = append(b, '-')
	b = appendInt(b, d, 2)
	b = append(b, 'T')
	b = appendInt(b, rem/3600, 2)
	b = append(b, ':')
	b = appendInt(b, rem%3600/60, 2)
	b = append(b, ':')
	b = appendInt(b, rem%60, 2)
	b = append(b, '.')
	b = appendInt(b, frac, 3)
	return string(append(b, 'Z'))
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// civilFromDays converts days since 1970-01-01 to a proleptic Gregorian
// date (Howard Hinnant's algorithm).
func civilFromDays(z int64) (y, m, d int64) {
	z += 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = doy - (153*mp+2)/5 + 1
	if mp < 10 {
		m = mp + 3
	} else {
		m = mp - 9
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}

func appendInt(b []byte, v int64, width int) []byte {
	s := strconv.FormatInt(v, 10)
	for i := len(s); i < width; i++ {
		b = append(b, '0')
	}
	return append(b, s...)
}
