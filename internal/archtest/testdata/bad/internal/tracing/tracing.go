package tracing
