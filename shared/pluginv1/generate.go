// Package pluginv1 is the generated gRPC code for toolhost's subprocess plugin
// protocol (plugin.proto). Plugin authors in Go use package shared instead;
// authors in other languages generate their own stubs from plugin.proto.
package pluginv1

// Regenerate with protoc, protoc-gen-go v1.36.12 and protoc-gen-go-grpc v1.5.1
// on PATH (see docs/plugin-protocol.md).
//go:generate protoc --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative plugin.proto
