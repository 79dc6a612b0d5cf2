"""The proto rule name @bazel_tools loads from rules_proto, forwarded to Bazel's native rule."""

def proto_library(**attrs):
    native.proto_library(**attrs)
