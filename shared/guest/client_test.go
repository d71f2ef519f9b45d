package guest

import (
	"encoding/json"
	"errors"
	"testing"
)

// TestDecodeClientAnswer: the host's answer to toolhost_sample and
// toolhost_elicit becomes the result, or a *ClientError carrying the code
// and limit; an answer with neither is an error, never a nil result.
func TestDecodeClientAnswer(t *testing.T) {
	res, err := DecodeClientAnswer[SampleResult]([]byte(`{"result":{"role":"assistant","content":{"type":"text","text":"4"},"model":"m","stopReason":"endTurn"}}`))
	if err != nil || res.Content.Text != "4" || res.Model != "m" || res.StopReason != "endTurn" {
		t.Errorf("result: %+v, %v", res, err)
	}
	_, err = DecodeClientAnswer[SampleResult]([]byte(`{"code":"LIMIT_EXCEEDED","limit":"client_requests","error":"too many"}`))
	var ce *ClientError
	if !errors.As(err, &ce) || ce.Code != "LIMIT_EXCEEDED" || ce.Limit != "client_requests" || err.Error() != "LIMIT_EXCEEDED: too many" {
		t.Errorf("error answer: %#v", err)
	}
	if _, err := DecodeClientAnswer[ElicitResult]([]byte(`{}`)); !errors.As(err, &ce) || ce.Code != "TOOL_EXECUTION_FAILED" {
		t.Errorf("empty answer: %v", err)
	}
	if _, err := DecodeClientAnswer[ElicitResult]([]byte(`not json`)); err == nil {
		t.Error("a malformed answer was accepted")
	}
}

// TestElicitResultBind: an accepted form decodes into a struct; a declined
// one is an error.
func TestElicitResultBind(t *testing.T) {
	var v struct {
		Name string `json:"name"`
		Age  int    `json:"age"`
	}
	r := &ElicitResult{Action: "accept", Content: json.RawMessage(`{"name":"Ada","age":36}`)}
	if err := r.Bind(&v); err != nil || v.Name != "Ada" || v.Age != 36 || !r.Accepted() {
		t.Errorf("accepted: %+v %v", v, err)
	}
	if err := (&ElicitResult{Action: "decline"}).Bind(&v); err == nil {
		t.Error("a declined form decoded")
	}
}
