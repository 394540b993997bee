// Command otelcol-loopguard is otel-loopguard's OpenTelemetry Collector distribution: the
// core Collector with exactly the components that the configurations in collector/ use
// (components.go), so they can be validated and run without Docker or the contrib image.
// Build it with scripts/build-collector.sh.
package main

import (
	"log"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/confmap/provider/yamlprovider"
	"go.opentelemetry.io/collector/otelcol"
)

func main() {
	info := component.BuildInfo{
		Command:     "otelcol-loopguard",
		Description: "OpenTelemetry Collector for otel-loopguard (the components collector/*.yaml use)",
		Version:     "0.161.0-loopguard",
	}
	settings := otelcol.CollectorSettings{
		BuildInfo: info,
		Factories: components,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{
			ResolverSettings: confmap.ResolverSettings{
				ProviderFactories: []confmap.ProviderFactory{
					envprovider.NewFactory(),
					fileprovider.NewFactory(),
					yamlprovider.NewFactory(),
				},
			},
		},
	}
	if err := otelcol.NewCommand(settings).Execute(); err != nil {
		log.Fatalf("collector server run finished with error: %v", err)
	}
}
