package watchcodec

import (
	"bytes"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
)

// MetaFactory finds an object's apiVersion and kind as apimachinery's
// SimpleMetaFactory does, without decoding the rest: it reads the
// object's top-level keys and steps over their values. Where the answer
// could differ from SimpleMetaFactory's (a key spelled in other case, an
// escape, anything but plain ASCII in a key or in apiVersion's and kind's
// values, bytes after the object), it asks SimpleMetaFactory.
var MetaFactory jsonserializer.MetaFactory = metaFactory{}

type metaFactory struct{}

func (metaFactory) Interpret(data []byte) (*schema.GroupVersionKind, error) {
	apiVersion, kind, ok := typeFields(data)
	if !ok {
		return jsonserializer.SimpleMetaFactory{}.Interpret(data)
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, err
	}
	return &schema.GroupVersionKind{Group: gv.Group, Version: gv.Version, Kind: kind}, nil
}

// typeFields is the values of the top-level keys apiVersion and kind of
// the JSON object data (the last of each, as encoding/json keeps), and
// whether data is simple enough to read so. It does not check the values
// of other keys for being JSON: whoever decodes data checks them.
func typeFields(data []byte) (apiVersion, kind string, ok bool) {
	s := scanner{data: data}
	if !s.consume('{') {
		return "", "", false
	}
	if s.consume('}') {
		return "", "", s.atEnd()
	}
	for {
		key, ok := s.plainString()
		if !ok || !s.consume(':') {
			return "", "", false
		}
		switch {
		case key == "apiVersion" || key == "kind":
			value, ok := s.plainString()
			if !ok {
				return "", "", false
			}
			if key == "kind" {
				kind = value
			} else {
				apiVersion = value
			}
		case strings.EqualFold(key, "apiVersion") || strings.EqualFold(key, "kind"):
			return "", "", false // encoding/json matches keys in any case
		default:
			if !s.skipValue() {
				return "", "", false
			}
		}
		if s.consume('}') {
			return apiVersion, kind, s.atEnd()
		}
		if !s.consume(',') {
			return "", "", false
		}
	}
}

// withoutManagedFields is a copy of the JSON object data without the
// managedFields of its top-level metadata, found as typeFields finds keys:
// where a key is not plain (an escape, anything but printable ASCII) or
// data is not an object, data is copied as it is. The value is stepped
// over, not checked: an API server wrote it, and no reader here keeps it.
func withoutManagedFields(data []byte) []byte {
	from, to, ok := managedFieldsSpan(data)
	if !ok {
		return bytes.Clone(data)
	}
	out := make([]byte, 0, len(data)-(to-from))
	out = append(out, data[:from]...)
	return append(out, data[to:]...)
}

// managedFieldsSpan is where data's metadata.managedFields member is, with
// the comma that parts it from the next member or, for the last, from the
// one before.
func managedFieldsSpan(data []byte) (from, to int, ok bool) {
	s := scanner{data: data}
	if !s.consume('{') {
		return 0, 0, false
	}
	for {
		key, ok := s.plainString()
		if !ok || !s.consume(':') {
			return 0, 0, false
		}
		if key == "metadata" {
			return s.memberSpan("managedFields")
		}
		if !s.skipValue() || !s.consume(',') {
			return 0, 0, false
		}
	}
}

// memberSpan is where the object at s's position has its member called
// name (the first, if several are), as managedFieldsSpan says; not found
// when the object does not close.
func (s *scanner) memberSpan(name string) (from, to int, ok bool) {
	if !s.consume('{') {
		return 0, 0, false
	}
	if s.consume('}') {
		return 0, 0, false
	}
	found := false
	previousEnd := -1 // where the member before ends, before its comma
	for {
		s.skipSpace()
		start := s.pos
		key, ok := s.plainString()
		if !ok || !s.consume(':') || !s.skipValue() {
			return 0, 0, false
		}
		end := s.pos
		last := !s.consume(',')
		if key == name && !found {
			found = true
			switch {
			case !last:
				from, to = start, s.pos
			case previousEnd >= 0:
				from, to = previousEnd, end
			default:
				from, to = start, end
			}
		}
		if last {
			return from, to, found && s.consume('}')
		}
		previousEnd = end
	}
}

// scanner reads JSON from data at pos.
type scanner struct {
	data []byte
	pos  int
}

func (s *scanner) skipSpace() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// consume steps over white space and c, and says whether c was there.
func (s *scanner) consume(c byte) bool {
	s.skipSpace()
	if s.pos < len(s.data) && s.data[s.pos] == c {
		s.pos++
		return true
	}
	return false
}

func (s *scanner) atEnd() bool {
	s.skipSpace()
	return s.pos == len(s.data)
}

// plainString reads a string of printable ASCII without escapes, which
// reads the same to every JSON decoder.
func (s *scanner) plainString() (string, bool) {
	if !s.consume('"') {
		return "", false
	}
	start := s.pos
	for ; s.pos < len(s.data); s.pos++ {
		switch c := s.data[s.pos]; {
		case c == '"':
			v := string(s.data[start:s.pos])
			s.pos++
			return v, true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return "", false
		}
	}
	return "", false
}

// skipValue steps over one value: a string, an object or an array up to
// what closes it, or a literal or number up to what ends it.
func (s *scanner) skipValue() bool {
	s.skipSpace()
	if s.pos >= len(s.data) {
		return false
	}
	switch s.data[s.pos] {
	case '"', '{', '[':
		var value valueScanner
		for ; s.pos < len(s.data); s.pos++ {
			if value.step(s.data[s.pos]) {
				s.pos++
				return true
			}
		}
		return false
	}
	start := s.pos
	for ; s.pos < len(s.data); s.pos++ {
		switch s.data[s.pos] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return s.pos > start
		}
	}
	return s.pos > start
}

// valueScanner follows a JSON string, object or array byte by byte,
// through the strings and brackets inside it, without checking the rest.
type valueScanner struct {
	depth            int
	inString, escape bool
}

// step reads the value's next byte, c, and says whether c ends the value.
func (v *valueScanner) step(c byte) bool {
	switch {
	case v.inString:
		switch {
		case v.escape:
			v.escape = false
		case c == '\\':
			v.escape = true
		case c == '"':
			v.inString = false
			return v.depth == 0
		}
	case c == '"':
		v.inString = true
	case c == '{' || c == '[':
		v.depth++
	case c == '}' || c == ']':
		v.depth--
		return v.depth == 0
	}
	return false
}

// watchEvent reads data as a watch event whose only keys are "type", a
// plain string, and "object", a JSON object, and says whether it could:
// then data reads the same to every JSON decoder, but for the object's
// bytes, which whoever decodes the object checks.
func watchEvent(data []byte) (typ string, object []byte, ok bool) {
	s := scanner{data: data}
	if !s.consume('{') {
		return "", nil, false
	}
	var seenType, seenObject bool
	for {
		key, ok := s.plainString()
		if !ok || !s.consume(':') {
			return "", nil, false
		}
		switch key {
		case "type":
			if typ, ok = s.plainString(); !ok {
				return "", nil, false
			}
			seenType = true
		case "object":
			s.skipSpace()
			if s.pos >= len(s.data) || s.data[s.pos] != '{' {
				return "", nil, false
			}
			start := s.pos
			if !s.skipValue() {
				return "", nil, false
			}
			object, seenObject = s.data[start:s.pos], true
		default:
			return "", nil, false
		}
		if s.consume('}') {
			return typ, object, seenType && seenObject && s.atEnd()
		}
		if !s.consume(',') {
			return "", nil, false
		}
	}
}
