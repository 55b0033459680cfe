package admission

// The Cache's answers that one of its parts gives: each asks that part.

// WritingAdmissions reports whether admissions decided wait for their
// write (decisions.WritingAdmissions).
func (c *Cache) WritingAdmissions() bool { return c.decisions.WritingAdmissions() }
