package plugin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Answer is a caller's answer to a Question, checked against the
// question's type.
type Answer struct {
	// Bool is the answer to a boolean question.
	Bool bool
	// Text is the answer to a text question, or the option chosen for a
	// select question.
	Text string
}

// Answer returns the caller's answer to q, checked against q's type. ok is
// false when the call carries no answer to q: ask it by returning
// &Result{NeedsInput: q}. An answer that does not fit q is an
// INVALID_REQUEST error that names the question, what it expects and what
// was given, so that the caller can answer again.
//
// The pipeline cannot check answers itself: a question is asked in one
// call and answered in the next, and no state survives a call, so only the
// tool knows which question an answer answers.
func (r *Request) Answer(q *Question) (a Answer, ok bool, err error) {
	raw, ok := r.Answers[q.ID]
	if !ok {
		return Answer{}, false, nil
	}
	a, err = q.ParseAnswer(raw)
	return a, true, err
}

// ParseAnswer checks raw, a JSON answer to q, against q's type:
//
//   - boolean: true or false; the strings "yes", "no", "true" and "false"
//     are accepted too (any case), since the question's text for a model
//     offers [yes/no];
//   - text: a string; a number or boolean counts as its JSON text (the CLI
//     reads --answer n=42 as the number 42);
//   - select: one of q.Options, exactly (a number or boolean as its text).
//
// Anything else is an INVALID_REQUEST *Error. An invalid question (see
// Result.NeedsInput) is an error of the tool's, not the caller's.
func (q *Question) ParseAnswer(raw json.RawMessage) (Answer, error) {
	if err := checkQuestion(q); err != nil {
		return Answer{}, fmt.Errorf("question %q: %w", q.ID, err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return Answer{}, Errorf(CodeInvalidRequest, "answer %q is not valid JSON: %s", q.ID, abbreviate(string(raw)))
	}
	wrong := func(expected string) (Answer, error) {
		return Answer{}, Errorf(CodeInvalidRequest, "answer %q: expected %s, got %s", q.ID, expected, describeValue(v))
	}
	switch q.Type {
	case AnswerBoolean:
		switch t := v.(type) {
		case bool:
			return Answer{Bool: t}, nil
		case string:
			switch strings.ToLower(strings.TrimSpace(t)) {
			case "true", "yes":
				return Answer{Bool: true}, nil
			case "false", "no":
				return Answer{Bool: false}, nil
			}
		}
		return wrong(`true or false (or "yes" or "no")`)
	case AnswerText:
		if s, ok := scalarText(v); ok {
			return Answer{Text: s}, nil
		}
		return wrong("a string")
	default: // AnswerSelect; checkQuestion allows no other
		if s, ok := scalarText(v); ok && slices.Contains(q.Options, s) {
			return Answer{Text: s}, nil
		}
		quoted := make([]string, len(q.Options))
		for i, o := range q.Options {
			quoted[i] = strconv.Quote(o)
		}
		return wrong("one of " + strings.Join(quoted, ", "))
	}
}

// scalarText is the text of a string, number or boolean.
func scalarText(v any) (string, bool) {
	switch t := v.(type) {
	case string:
		return t, true
	case json.Number:
		return t.String(), true
	case bool:
		return strconv.FormatBool(t), true
	}
	return "", false
}

// abbreviate quotes s, cut to maxShown bytes.
func abbreviate(s string) string {
	if len(s) > maxShown {
		return describeValue(s)[len("string "):]
	}
	return strconv.Quote(s)
}
