package curl

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// cookieZones are the zone names an Expires date may end with, as curl
// 7.88 knows them, with their offset east of UTC in minutes (a summer
// zone is one hour ahead of its winter one), and the military letters.
var cookieZones = func() map[string]int {
	z := map[string]int{
		"GMT": 0, "UT": 0, "UTC": 0, "WET": 0, "BST": 60, "WAT": -60, "AST": -240, "ADT": -180,
		"EST": -300, "EDT": -240, "CST": -360, "CDT": -300, "MST": -420, "MDT": -360, "PST": -480, "PDT": -420,
		"YST": -540, "YDT": -480, "HST": -600, "HDT": -540, "CAT": -600, "AHST": -600, "NT": -660, "IDLW": -720,
		"CET": 60, "MET": 60, "MEWT": 60, "MEST": 120, "CEST": 120, "MESZ": 120, "FWT": 60, "FST": 120,
		"EET": 120, "WAST": 420, "WADT": 480, "CCT": 480, "JST": 540, "EAST": 600, "EADT": 660, "GST": 600,
		"NZT": 720, "NZST": 720, "NZDT": 780, "IDLE": 720, "Z": 0,
	}
	// A to M but J are one to twelve hours west of UTC, N to Y one to
	// twelve hours east, as curl reads them.
	for i, c := range "ABCDEFGHIKLM" {
		z[string(c)] = -(i + 1) * 60
	}
	for i, c := range "NOPQRSTUVWXY" {
		z[string(c)] = (i + 1) * 60
	}
	return z
}()

var (
	cookieWeekdays = []string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}
	cookieMonths   = []string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}
)

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// curlDate reads an Expires date as curl 7.88 reads it, in Unix
// seconds: up to six words and numbers, in any order, separated by
// anything but letters and digits: a weekday (three letters or the whole
// name; not used), a month (three letters), a zone name (cookieZones) or
// an offset +hhmm or -hhmm, hh:mm:ss or hh:mm, the day of the month (1 to
// 31), the year (after the day; two digits are 1971 to 2070), or YYYYMMDD.
// ok is false for a word that is none of those, a missing day, month or
// year, a year before 1583, or a field out of range. A date past the
// int64 range of seconds is math.MaxInt64.
func curlDate(s string) (t int64, ok bool) {
	wday, mon, mday, year, hour, min, sec := -1, -1, -1, -1, -1, -1, -1
	zone, zoneSet := 0, false
	dayNext := true // the next bare number is the day (else the year)
	i := 0
	for part := 0; i < len(s) && part < 6; part++ {
		for i < len(s) && !isAlpha(s[i]) && !isDigit(s[i]) {
			i++
		}
		start := i
		switch {
		case i < len(s) && isAlpha(s[i]):
			for i < len(s) && isAlpha(s[i]) && i-start < 31 {
				i++
			}
			w := s[start:i]
			found := false
			if wday == -1 {
				for n, d := range cookieWeekdays {
					if len(w) == 3 && strings.EqualFold(w, d[:3]) || len(w) > 3 && strings.EqualFold(w, d) {
						wday, found = n, true
					}
				}
			}
			if !found && mon == -1 && len(w) == 3 {
				for n, m := range cookieMonths {
					if strings.EqualFold(w, m) {
						mon, found = n, true
					}
				}
			}
			if !found && !zoneSet && len(w) <= 4 {
				if off, known := cookieZones[strings.ToUpper(w)]; known {
					zone, zoneSet, found = off*60, true, true
				}
			}
			if !found {
				return 0, false
			}
		case i < len(s) && isDigit(s[i]):
			if sec == -1 {
				if h, m, sc, n := clockAt(s[i:]); n > 0 {
					hour, min, sec, i = h, m, sc, i+n
					continue
				}
			}
			for i < len(s) && isDigit(s[i]) {
				i++
			}
			val, err := strconv.ParseInt(s[start:i], 10, 32)
			if err != nil {
				return 0, false
			}
			found := false
			if !zoneSet && i-start == 4 && val <= 1400 && start > 0 && (s[start-1] == '+' || s[start-1] == '-') {
				off := int((val/100*60 + val%100) * 60)
				if s[start-1] == '-' {
					off = -off
				}
				zone, zoneSet, found = off, true, true
			}
			if i-start == 8 && year == -1 && mon == -1 && mday == -1 {
				year, mon, mday, found = int(val/10000), int(val%10000/100-1), int(val%100), true
			}
			if !found && dayNext && mday == -1 {
				if val > 0 && val < 32 {
					mday, found = int(val), true
				}
				dayNext = false
			}
			if !found && !dayNext && year == -1 {
				year, found = int(val), true
				if year < 100 {
					if year > 70 {
						year += 1900
					} else {
						year += 2000
					}
				}
				if mday == -1 {
					dayNext = true
				}
			}
			if !found {
				return 0, false
			}
		default:
			return 0, false
		}
	}
	if sec == -1 {
		hour, min, sec = 0, 0, 0
	}
	if mday == -1 || mon == -1 || year == -1 || year < 1583 || mday > 31 || mon > 11 || hour > 23 || min > 59 || sec > 60 {
		return 0, false
	}
	u := time.Date(year, time.Month(mon+1), mday, hour, min, sec, 0, time.UTC).Unix()
	if off := int64(-zone); off > 0 && u > math.MaxInt64-off {
		return math.MaxInt64, true
	}
	return u - int64(zone), true
}

// clockAt reads hh:mm:ss or hh:mm (one or two digits each) at the start
// of s, and returns how many bytes it took (0: none).
func clockAt(s string) (h, m, sec, n int) {
	num := func(at int) (int, int) {
		v, k := 0, 0
		for k < 2 && at+k < len(s) && isDigit(s[at+k]) {
			v = v*10 + int(s[at+k]-'0')
			k++
		}
		return v, k
	}
	h, k := num(0)
	if k == 0 || k >= len(s) || s[k] != ':' {
		return 0, 0, 0, 0
	}
	at := k + 1
	m, k = num(at)
	if k == 0 {
		return 0, 0, 0, 0
	}
	at += k
	if at < len(s) && s[at] == ':' {
		if sec, k = num(at + 1); k > 0 {
			return h, m, sec, at + 1 + k
		}
	}
	return h, m, 0, at
}
