package main

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/resource"
)

// nullProvider has an empty configuration schema and nothing to configure, like upstream's
// internal/provider/provider.go (v3.2.4).
//
// It serves null_resource only. Upstream also has the deprecated null_data_source, which this
// project does not use; leaving it out means a configuration that does fails `validate` with
// "unsupported data source" in the tests, rather than passing against behaviour nobody checked.
type nullProvider struct{}

var _ provider.Provider = nullProvider{}

func newProvider() provider.Provider { return nullProvider{} }

func (nullProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "null"
	resp.Version = version
}

func (nullProvider) Schema(context.Context, provider.SchemaRequest, *provider.SchemaResponse) {}

func (nullProvider) Configure(context.Context, provider.ConfigureRequest, *provider.ConfigureResponse) {
}

func (nullProvider) Resources(context.Context) []func() resource.Resource {
	return []func() resource.Resource{newNullResource}
}

func (nullProvider) DataSources(context.Context) []func() datasource.DataSource { return nil }
