package web

import (
	"strconv"
	"strings"
)

// Counts are what one apply did, by kind: the numbers an apply's marker
// shows in its swimlane.
type Counts struct {
	Applied  int
	Created  int
	Replaced int
	Updated  int
	Removed  int
	Held     int
	Failed   int
}

// Changed is how many resources the apply created, replaced, updated or
// removed.
func (c Counts) Changed() int { return c.Created + c.Replaced + c.Updated + c.Removed }

// ParseApplySummary reads the counts back from an apply entry's summary, as
// the timeline writes it (projections' applyLine over
// events.ApplyReported.Summary, then a churn mark):
//
//	applied A resource(s)[, H held for untaken modules (m1: h1, ...)][, F failed]
//	  [; created n1, n2, ... and K more][; replaced n (f1, f2), ...][; updated ...]
//	  [; removed ...][; failed n (error), ...][; churn ...]
//
// A list names at most a few resources and counts the rest ("and K more");
// a name in it never holds ", " or "; ", but a replaced or updated name is
// followed by its fields in parentheses, which may. The failed list is not
// read (its errors may hold anything); its count is the head's. ok is false
// when s does not start as an apply summary; what could be read before an
// unexpected part is returned either way.
//
// The timeline's entries carry no counts of their own, only this line; a
// table test holds this reading to lines the projections write.
func ParseApplySummary(s string) (c Counts, ok bool) {
	head, rest, _ := strings.Cut(s, "; ")
	parts := strings.Split(head, ", ")
	a, found := strings.CutPrefix(parts[0], "applied ")
	if !found {
		return Counts{}, false
	}
	a, found = strings.CutSuffix(a, " resource(s)")
	if !found {
		return Counts{}, false
	}
	n, err := strconv.Atoi(a)
	if err != nil || n < 0 {
		return Counts{}, false
	}
	c.Applied = n
	for _, p := range parts[1:] {
		switch {
		case strings.Contains(p, " held for untaken modules"):
			num, _, _ := strings.Cut(p, " ")
			if h, err := strconv.Atoi(num); err == nil && h >= 0 {
				c.Held = h
			}
		case strings.HasSuffix(p, " failed"):
			if f, err := strconv.Atoi(strings.TrimSuffix(p, " failed")); err == nil && f >= 0 {
				c.Failed = f
			}
		}
	}
	for rest != "" {
		var sec string
		sec, rest = cutSection(rest)
		verb, list, _ := strings.Cut(sec, " ")
		switch verb {
		case "created":
			c.Created = countList(list)
		case "replaced":
			c.Replaced = countList(list)
		case "updated":
			c.Updated = countList(list)
		case "removed":
			c.Removed = countList(list)
		default: // failed (counted in the head), a churn mark, or newer parts
			return c, true
		}
	}
	return c, true
}

// cutSection cuts s at the first "; " outside parentheses.
func cutSection(s string) (sec, rest string) {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			if depth > 0 {
				depth--
			}
		case ';':
			if depth == 0 && strings.HasPrefix(s[i:], "; ") {
				return s[:i], s[i+2:]
			}
		}
	}
	return s, ""
}

// countList counts the names of "a, b (f1, f2), c and 4 more": the names
// listed (commas inside parentheses aside) and the K of "and K more".
func countList(list string) int {
	if list == "" {
		return 0
	}
	more := 0
	if i := strings.LastIndex(list, " and "); i >= 0 && strings.HasSuffix(list, " more") && i+len(" and ") <= len(list)-len(" more") {
		if k, err := strconv.Atoi(list[i+len(" and ") : len(list)-len(" more")]); err == nil && k > 0 && k < 1<<31 {
			more = k
			list = list[:i]
		}
	}
	n, depth := 1, 0
	for i := 0; i < len(list); i++ {
		switch list[i] {
		case '(':
			depth++
		case ')':
			if depth > 0 {
				depth--
			}
		case ',':
			if depth == 0 {
				n++
			}
		}
	}
	return n + more
}
