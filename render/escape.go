package render

import (
	"fmt"
	"io"
	"reflect"
	"strings"
	"unicode/utf8"
)

// What reaches an operator's terminal. Every string a printer shows may
// have come from a node (resource names, failure messages, a heartbeat's
// version, plan answers), a file or history, so none is printed raw: the
// printers of this package write only through pf and pln, which pass
// each string argument (string types, []string, errors, Stringers of a
// string type) through Escape; the format strings are this package's own.
// A test walks every printer with hostile strings and fails on a raw
// control byte, and another fails on a fmt.Fprint* call outside this file.
//
// Escape writes, in a table or a sentence:
//   - newline, carriage return and tab as \n, \r and \t (a newline in a
//     cell never starts a forged line, a tab never shifts a column);
//   - every other C0 control (U+0000-U+001F), DEL (U+007F), every C1
//     control (U+0080-U+009F) and the Unicode bidi controls
//     (U+202A-U+202E, U+2066-U+2069) as \uXXXX;
//   - invalid UTF-8 bytes as \xXX.
//
// A backslash is left as it is: Escape of an escaped string is itself.
//
// JSON output (WriteJSON) escapes C0 as encoding/json does (\u001b, \n),
// and DEL, C1 and the bidi controls as \uXXXX too, which encoding/json
// writes raw: a JSON reader gets the same string back.

// Escape is s with its control characters escaped, as above.
func Escape(s string) string { return escape(s, false) }

// Text is s with its control characters escaped except newline and tab:
// for a message of several lines (a CLI error), whose own lines stay.
func Text(s string) string { return escape(s, true) }

// unsafe reports whether r is escaped (newline and tab aside).
func unsafe(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) ||
		(r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

func escape(s string, keepLines bool) string {
	clean := true
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || unsafe(r) {
			clean = false
			break
		}
		i += n
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case (r == '\n' || r == '\t') && keepLines:
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case unsafe(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// escapeJSON escapes in encoded JSON what encoding/json leaves raw: DEL,
// the C1 controls and the bidi controls, as \uXXXX (they occur only
// inside strings, where that escape means the same character).
func escapeJSON(b []byte) []byte {
	clean := true
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError && unsafe(r) {
			clean = false
			break
		}
		i += n
	}
	if clean {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError && unsafe(r) && r != '\n' && r != '\t' && r != '\r' && r >= 0x7f {
			out = fmt.Appendf(out, `\u%04x`, r)
		} else {
			out = append(out, b[i:i+n]...)
		}
		i += n
	}
	return out
}

// escapeArgs is args with every string among them escaped: strings and
// types of kind string (through their String method when they have one),
// []string, and errors; numbers, times and the rest as they are.
func escapeArgs(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case nil:
			out[i] = v
		case string:
			out[i] = Escape(v)
		case []string:
			c := make([]string, len(v))
			for j, s := range v {
				c[j] = Escape(s)
			}
			out[i] = c
		case error:
			out[i] = Escape(v.Error())
		default:
			out[i] = a
			if rv := reflect.ValueOf(a); rv.Kind() == reflect.String {
				if s, ok := a.(fmt.Stringer); ok {
					out[i] = Escape(s.String())
				} else {
					out[i] = Escape(rv.String())
				}
			}
		}
	}
	return out
}

// pf is fmt.Fprintf with every string argument escaped: the one way this
// package's printers write a formatted line.
func pf(w io.Writer, format string, args ...any) (int, error) {
	return fmt.Fprintf(w, format, escapeArgs(args)...)
}

// pln is fmt.Fprintln with every string argument escaped.
func pln(w io.Writer, args ...any) (int, error) {
	return fmt.Fprintln(w, escapeArgs(args)...)
}

// SafeWriter is w with every control character but newline and tab
// escaped (as Text does) on its way through: for text a printer of
// another package writes (store verify's report), whose own lines stay.
// Each Write is escaped whole: a rune cut between two writes shows as
// \xXX escapes, never raw.
func SafeWriter(w io.Writer) io.Writer { return safeWriter{w} }

type safeWriter struct{ w io.Writer }

func (s safeWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(s.w, Text(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
