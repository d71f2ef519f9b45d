//go:build !linux

package declared

import "io/fs"

// changeStamp adds nothing off Linux (each system names the change time
// differently in syscall.Stat_t): a rewrite of the same size under the same
// modification time goes unnoticed there.
func changeStamp(fs.FileInfo) string { return "" }
