package scheduler

import (
	"fmt"
	"reflect"
	"strings"
)

// Names stay in their namespace. A unit's wait reason and the reason it is
// preempted land in its status and its job's events, which its own
// namespace's users read; they must not learn the names of other
// namespaces' units. So the scheduler never formats a unit's key into a
// message: it writes a Text, which keeps the units it mentions apart from
// its words, and renders it for the namespace that reads it. A unit of that
// namespace is named; a unit of another is "a unit of another namespace".
//
// Every reason leaving the scheduler is rendered for its reader: a wait
// reason (Result.Waits, WaitReason) for the namespace of the unit that
// waits, a preemption's reason (Preemption.Reason) by the controller for
// each victim's namespace.

// Text is a message that may mention units, rendered for a reader by For.
// The zero Text is the empty message.
type Text struct {
	format string
	args   []any
}

// unitRef is a unit (its key) mentioned in a Text: named to readers of its
// namespace, described to others.
type unitRef string

// unitList is units mentioned in a Text, as a list: those of the reader's
// namespace by name, the others counted.
type unitList []string

// privateNote is a note about a unit (such as what its pods lack), shown
// only to readers of that unit's namespace.
type privateNote struct {
	unit, note string
}

// say is a Text: format as fmt.Sprintf's, whose arguments may be unitRef,
// unitList, privateNote or Text (all rendered for the reader) or plain
// values, which must not be or contain unit keys.
func say(format string, args ...any) Text {
	return Text{format: format, args: args}
}

// words is a Text of plain words that mention no unit (an error's message,
// a quota's explanation).
func words(s string) Text { return Text{format: s} }

// For renders the text for readers of the namespace ns.
func (t Text) For(ns string) string {
	if len(t.args) == 0 {
		return t.format
	}
	args := make([]any, len(t.args))
	for i, a := range t.args {
		switch a := a.(type) {
		case unitRef:
			args[i] = a.name(ns)
		case unitList:
			args[i] = a.names(ns)
		case privateNote:
			if namespaceOf(a.unit) == ns {
				args[i] = a.note
			} else {
				args[i] = ""
			}
		case Text:
			args[i] = a.For(ns)
		default:
			args[i] = a
		}
	}
	return fmt.Sprintf(t.format, args...)
}

// String renders the text for a reader of no namespace: it names no unit.
// Logs and test failures print it; status and events use For.
func (t Text) String() string { return t.For("") }

// IsZero reports whether the text is empty.
func (t Text) IsZero() bool { return t.format == "" && len(t.args) == 0 }

// Equal reports whether two texts say the same, for any reader.
func (t Text) Equal(o Text) bool { return t.format == o.format && reflect.DeepEqual(t.args, o.args) }

func (u unitRef) name(ns string) string {
	if namespaceOf(string(u)) == ns {
		return string(u)
	}
	return "a unit of another namespace"
}

func (l unitList) names(ns string) string {
	var named []string
	others := 0
	for _, k := range l {
		if namespaceOf(k) == ns {
			named = append(named, k)
		} else {
			others++
		}
	}
	switch {
	case others == 1:
		named = append(named, "a unit of another namespace")
	case others > 1:
		named = append(named, fmt.Sprintf("%d units of other namespaces", others))
	}
	return strings.Join(named, ", ")
}
