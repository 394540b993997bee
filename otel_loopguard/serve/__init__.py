"""``otel-loopguard serve``: the OTLP detection service (the ``[serve]`` extra).

Agents in any language export their spans here (OTLP gRPC or HTTP); the same span follower
and monitor as in-process judge them (:mod:`otel_loopguard.serve.pipeline`, through
``analyze``'s replayer); decisions leave as metrics, as ``loopguard.decision`` spans in the
agent's own trace and, with a store configured, as the run's STOP. One module per job:
``decode`` (bytes to span views), ``grpc_receiver`` / ``http_receiver`` (the two
transports), ``admission`` (limits, backpressure, the bearer token), ``pipeline`` (the one
engine thread), ``output`` (what leaves), ``service`` (start, health, drain on SIGTERM),
``command`` (the flags).
"""
