// Package jsontest holds test oracles for JSON, written with nothing but
// encoding/json's tokenizer so that they share no code with what they
// check (events.CheckKeys and the door's strict decoding). For tests only.
package jsontest

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// HasDuplicateKey reports whether some object of data, at any depth, gives
// a key twice (compared as encoding/json decodes keys). data must be valid
// JSON; an error says it is not.
func HasDuplicateKey(data []byte) (bool, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // 1e700 is valid JSON, and no float64
	var walk func() (bool, error)
	walk = func() (bool, error) {
		tok, err := dec.Token()
		if err != nil {
			return false, err
		}
		dup := false
		switch tok {
		case json.Delim('{'):
			keys := map[string]bool{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return false, err
				}
				key, ok := k.(string)
				if !ok {
					return false, fmt.Errorf("jsontest: key %v", k)
				}
				dup = dup || keys[key]
				keys[key] = true
				d, err := walk()
				if err != nil {
					return false, err
				}
				dup = dup || d
			}
		case json.Delim('['):
			for dec.More() {
				d, err := walk()
				if err != nil {
					return false, err
				}
				dup = dup || d
			}
		default:
			return false, nil
		}
		_, err = dec.Token() // the closing delimiter
		return dup, err
	}
	return walk()
}
