package main

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// replaceOnTriggerChange decides when a change of `triggers` replaces the resource, by the rules
// of upstream's RequiresReplaceIfValuesNotNull (internal/planmodifiers/attribute.go, v3.2.4).
// Those rules exist because terraform-plugin-sdk, which null 3.1 and older were built on, never
// stored map keys whose value was null (and stored a map of only nulls as no map at all): a key
// with a null value, present in configuration but absent from state, is therefore no change.
type replaceOnTriggerChange struct{}

var _ planmodifier.Map = replaceOnTriggerChange{}

func (replaceOnTriggerChange) Description(context.Context) string {
	return "If the value of this attribute changes, Terraform will destroy and recreate the resource."
}

func (m replaceOnTriggerChange) MarkdownDescription(ctx context.Context) string {
	return m.Description(ctx)
}

func (replaceOnTriggerChange) PlanModifyMap(_ context.Context, req planmodifier.MapRequest, resp *planmodifier.MapResponse) {
	// Creating or destroying the resource is never a replacement.
	if req.State.Raw.IsNull() || req.Plan.Raw.IsNull() {
		return
	}
	resp.RequiresReplace = triggersChanged(req.StateValue, req.ConfigValue)
}

// triggersChanged reports whether configured triggers differ from stored ones in a way that
// upstream treats as a change. An unknown map, or an unknown value, always counts as one.
func triggersChanged(stored, configured types.Map) bool {
	if configured.Equal(stored) {
		return false
	}
	if stored.IsNull() {
		// Nothing stored: only a value that is not null is new.
		return !allNull(configured)
	}
	storedValues, configuredValues := stored.Elements(), configured.Elements()
	for key := range storedValues {
		if _, kept := configuredValues[key]; !kept {
			return true // a stored key was removed
		}
	}
	for key, value := range configuredValues {
		old, wasStored := storedValues[key]
		if !wasStored && value.IsNull() {
			continue // a new key without a value
		}
		if !value.Equal(old) {
			return true
		}
	}
	return false
}

func allNull(m types.Map) bool {
	for _, value := range m.Elements() {
		if !value.IsNull() {
			return false
		}
	}
	return true
}
