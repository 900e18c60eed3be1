// Package readme checks that a README shows a program as it is.
package readme

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// OpensWith returns an error unless the first Go code block of the README
// at readmePath is the file at programPath, as it is, so that what a
// reader copies is what builds and runs.
func OpensWith(readmePath, programPath string) error {
	src, err := os.ReadFile(programPath)
	if err != nil {
		return err
	}
	text, err := os.ReadFile(readmePath)
	if err != nil {
		return err
	}
	first := strings.Index(string(text), "```go\n")
	if first < 0 {
		return errors.New(readmePath + " has no Go code block")
	}
	if !strings.HasPrefix(string(text)[first:], "```go\n"+string(src)+"```\n") {
		return fmt.Errorf("%s's first Go code block is not %s: copy the file into it", readmePath, programPath)
	}
	return nil
}
