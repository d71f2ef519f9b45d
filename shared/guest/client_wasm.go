//go:build wasip1

package guest

import (
	"encoding/json"
	"errors"

	pdk "github.com/extism/go-pdk"
)

//go:wasmimport extism:host/user toolhost_sample
func hostSample(uint64) uint64

//go:wasmimport extism:host/user toolhost_elicit
func hostElicit(uint64) uint64

// Sample asks the caller's client for a completion from its LLM (MCP
// sampling/createMessage) and waits for it, within the call's deadline.
// A refusal or failure is a *ClientError. A module that calls it imports
// toolhost_sample, which only toolhost provides.
func Sample(req SampleRequest) (*SampleResult, error) {
	return askClient[SampleResult](hostSample, req)
}

// Elicit asks the caller's client to put a form to its user (MCP
// elicitation/create, form mode) and waits for the answer, within the
// call's deadline: give the tool a timeout a person can answer in. A user
// who declines or cancels is an answer, not an error. A refusal or failure
// is a *ClientError. A module that calls it imports toolhost_elicit, which
// only toolhost provides.
func Elicit(req ElicitRequest) (*ElicitResult, error) {
	return askClient[ElicitResult](hostElicit, req)
}

func askClient[T SampleResult | ElicitResult](f func(uint64) uint64, req any) (*T, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	mem := pdk.AllocateBytes(b)
	off := f(mem.Offset())
	if off == 0 {
		return nil, errors.New("the host returned nothing")
	}
	rm := pdk.FindMemory(off)
	defer rm.Free()
	return DecodeClientAnswer[T](rm.ReadBytes())
}
