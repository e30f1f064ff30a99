package main

import (
	"context"
	"math/rand/v2"
	"strconv"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// The schema's texts, word for word as upstream's internal/provider/resource.go (v3.2.4) has
// them: `providers schema -json` shows them, and the cdktf bindings were generated from them.
const (
	resourceDescription = "The `null_resource` resource implements the standard resource lifecycle but takes no further action. " +
		"On Terraform 1.4 and later, use the [`terraform_data` resource type](https://developer.hashicorp.com/terraform/language/resources/terraform-data) instead. " +
		"Terraform 1.9 and later support the `moved` configuration block from `null_resource` to `terraform_data`.\n\n" +
		"The `triggers` argument allows specifying an arbitrary set of values that, when changed, will cause the resource to be replaced."
	triggersDescription = "A map of arbitrary strings that, when changed, will force the null resource to be replaced, re-running any associated provisioners."
	idDescription       = "This is set to a random value at create time."
)

// nullResource keeps its configuration in state and does nothing else; its provisioners are
// Terraform's business. Same lifecycle as upstream's internal/provider/resource.go (v3.2.4).
type nullResource struct{}

var _ resource.Resource = nullResource{}

func newNullResource() resource.Resource { return nullResource{} }

// nullResourceModel is the state: schema version 0, as upstream's (no state upgrades exist).
type nullResourceModel struct {
	ID       types.String `tfsdk:"id"`
	Triggers types.Map    `tfsdk:"triggers"`
}

func (nullResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_resource"
}

func (nullResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: resourceDescription,
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Description: idDescription,
				Computed:    true,
				// An in-place update (a trigger key added with a null value) keeps the id.
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"triggers": schema.MapAttribute{
				Description:   triggersDescription,
				ElementType:   types.StringType,
				Optional:      true,
				PlanModifiers: []planmodifier.Map{replaceOnTriggerChange{}},
			},
		},
	}
}

// Create stores the planned triggers and a random decimal id (upstream: fmt of rand.Int()).
func (nullResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var model nullResourceModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &model)...)
	if resp.Diagnostics.HasError() {
		return
	}
	model.ID = types.StringValue(strconv.Itoa(rand.Int()))
	resp.Diagnostics.Append(resp.State.Set(ctx, &model)...)
}

// Read has nothing to refresh: the state is the truth.
func (nullResource) Read(context.Context, resource.ReadRequest, *resource.ReadResponse) {}

// Update only happens when no trigger forced a replacement (see triggers.go); it stores the plan.
func (nullResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var model nullResourceModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &model)...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("triggers"), model.Triggers)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), model.ID)...)
}

// Delete has nothing to delete; the framework drops the state when it returns no error.
func (nullResource) Delete(context.Context, resource.DeleteRequest, *resource.DeleteResponse) {}
