# Versions of the test bed's servers; the tools modules pin the same ones.
PYROSCOPE_VERSION=v1.12.0
JAEGER_VERSION=v1.76.0
SEAWEEDFS_VERSION=v0.0.0-20261109003541-7506e5f91cd6
