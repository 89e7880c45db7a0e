package fleet

import (
	"bytes"
	"encoding/json"
	"fmt"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/runtime/lab"
)

// LabSpec is the SignalBot spec that applies experiment index of the finished Strategy Lab
// job j: the symbol, market and strategy block of lab.Request.SpecFragment, everything else
// left to the CRD's defaults (Create then puts it on the caller's default paper account).
// The errors are lab.Job.Experiment's.
func LabSpec(j lab.Job, index int) (tradingv1.SignalBotSpec, error) {
	e, err := j.Experiment(index)
	if err != nil {
		return tradingv1.SignalBotSpec{}, err
	}
	frag, err := j.Request.SpecFragment(e)
	if err != nil {
		return tradingv1.SignalBotSpec{}, err
	}
	// Strict decoding: a field of the fragment the spec does not know would otherwise be
	// dropped silently and the bot would run another strategy than the one tested.
	dec := json.NewDecoder(bytes.NewReader(frag))
	dec.DisallowUnknownFields()
	var spec tradingv1.SignalBotSpec
	if err := dec.Decode(&spec); err != nil {
		return tradingv1.SignalBotSpec{}, fmt.Errorf("fleet: lab job %s experiment %d: %w", j.ID, index, err)
	}
	return spec, nil
}
