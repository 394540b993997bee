// A Node.js agent for the otel-loopguard serve tests: one `invoke_agent` run whose tool
// calls are GenAI-semconv `execute_tool` spans, exported over OTLP/HTTP protobuf by the
// OpenTelemetry JS SDK. The conversation id travels as baggage, and the baggage span
// processor copies it onto every span (what the Collector routes replicas by).
//
// Usage: node agent.js <otlp base url> <service name> <loop|healthy> [calls]
// Prints the trace id once the exporter has flushed.
"use strict";

const { context, propagation, trace } = require("@opentelemetry/api");
const { BaggageSpanProcessor } = require("@opentelemetry/baggage-span-processor");
const { OTLPTraceExporter } = require("@opentelemetry/exporter-trace-otlp-proto");
const { resourceFromAttributes } = require("@opentelemetry/resources");
const { BasicTracerProvider, BatchSpanProcessor } = require("@opentelemetry/sdk-trace-base");

async function main() {
  const [endpoint, service, run, callsText] = process.argv.slice(2);
  const calls = Number(callsText || 8);
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ "service.name": service }),
    spanProcessors: [
      // only our key: baggage from elsewhere must not become span attributes here
      new BaggageSpanProcessor((key) => key === "gen_ai.conversation.id"),
      new BatchSpanProcessor(new OTLPTraceExporter({ url: `${endpoint}/v1/traces` }), {
        scheduledDelayMillis: 200,
      }),
    ],
  });
  const tracer = provider.getTracer("node-scripted-agent");
  const conversation = `conv-${service}-${process.pid}`;
  const withBaggage = propagation.setBaggage(
    context.active(),
    propagation.createBaggage({ "gen_ai.conversation.id": { value: conversation } }),
  );
  const root = tracer.startSpan(
    "invoke_agent researcher",
    { attributes: { "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "researcher" } },
    withBaggage,
  );
  const inRun = trace.setSpan(withBaggage, root);
  for (let index = 0; index < calls; index++) {
    const looping = run === "loop";
    const span = tracer.startSpan(
      "execute_tool search",
      {
        attributes: {
          "gen_ai.operation.name": "execute_tool",
          "gen_ai.tool.name": "search",
          "gen_ai.tool.call.id": `call_${index}`,
          "gen_ai.tool.call.arguments": JSON.stringify({ query: looping ? "pricing" : `topic ${index}` }),
          "gen_ai.tool.call.result": looping ? "no results" : `found page ${index}`,
        },
      },
      inRun,
    );
    await new Promise((resolve) => setTimeout(resolve, 5));
    span.end();
  }
  root.end();
  await provider.shutdown();
  console.log(root.spanContext().traceId);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
