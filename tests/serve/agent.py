"""A Python agent in a process of its own, exporting GenAI-semconv spans with the real OTLP
exporters (gRPC or HTTP) to the detection service; run by the tests as a script.

``loop``: one ``invoke_agent`` run whose model asks for the same search again and again and
gets the same empty answer (what the service must STOP); ``healthy``: a run whose calls and
answers all differ. Prints the trace id (hex) on stdout once the exporter has flushed.
"""

from __future__ import annotations

import argparse
import json
import sys

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor


def exporter(protocol: str, endpoint: str, token: str | None, ca: str | None):
    headers = {"authorization": f"Bearer {token}"} if token else None
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        credentials = None
        if ca:
            import grpc

            with open(ca, "rb") as handle:
                credentials = grpc.ssl_channel_credentials(handle.read())
        return OTLPSpanExporter(
            endpoint=endpoint,
            insecure=ca is None,
            credentials=credentials,
            headers=tuple(headers.items()) if headers else None,
        )
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter(
        endpoint=f"{endpoint}/v1/traces", headers=headers, certificate_file=ca or None
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--protocol", choices=("grpc", "http"), required=True)
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--run", choices=("loop", "healthy"), required=True)
    parser.add_argument("--service", required=True)
    parser.add_argument("--calls", type=int, default=8)
    parser.add_argument("--conversation")
    parser.add_argument(
        "--first-call", type=int, default=0, help="number of the first call (a later turn)"
    )
    parser.add_argument("--token")
    parser.add_argument("--ca", help="CA file of the service's TLS certificate")
    args = parser.parse_args()
    provider = TracerProvider(resource=Resource.create({"service.name": args.service}))
    provider.add_span_processor(
        BatchSpanProcessor(exporter(args.protocol, args.endpoint, args.token, args.ca))
    )
    tracer = provider.get_tracer("scripted-agent")
    common = {"gen_ai.conversation.id": args.conversation} if args.conversation else {}
    with tracer.start_as_current_span(
        "invoke_agent researcher",
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "researcher",
            **common,
        },
    ) as root:
        for index in range(args.first_call, args.first_call + args.calls):
            query = "pricing" if args.run == "loop" else f"topic {index}"
            result = "no results" if args.run == "loop" else f"found page {index}"
            with tracer.start_as_current_span(
                "execute_tool search",
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "search",
                    "gen_ai.tool.call.id": f"call_{index}",
                    "gen_ai.tool.call.arguments": json.dumps({"query": query}),
                    "gen_ai.tool.call.result": result,
                    **common,
                },
            ):
                pass
        trace_id = format(root.get_span_context().trace_id, "032x")
    provider.shutdown()
    print(trace_id, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
