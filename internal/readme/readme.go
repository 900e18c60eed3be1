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
	text, src, err := readBoth(readmePath, programPath)
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

// Quotes returns an error unless the README at readmePath has a Go code
// block whose first line is "// " followed by name, and whose other lines
// are whole lines of the file at programPath, as they are there: a
// program's heart shown in a page, which a test keeps true.
func Quotes(readmePath, programPath, name string) error {
	text, src, err := readBoth(readmePath, programPath)
	if err != nil {
		return err
	}
	head := "```go\n// " + name + "\n"
	at := strings.Index(string(text), head)
	if at < 0 {
		return fmt.Errorf("%s has no Go code block that opens with // %s", readmePath, name)
	}
	body := string(text)[at+len(head):]
	end := strings.Index(body, "```\n")
	if end < 0 {
		return fmt.Errorf("%s: the block from %s does not end", readmePath, name)
	}
	if !strings.Contains("\n"+string(src), "\n"+body[:end]) {
		return fmt.Errorf("%s's block from %s is not in %s as it is: copy it again", readmePath, name, programPath)
	}
	return nil
}

// readBoth reads the README and the program.
func readBoth(readmePath, programPath string) (readme, program []byte, err error) {
	if program, err = os.ReadFile(programPath); err != nil {
		return nil, nil, err
	}
	readme, err = os.ReadFile(readmePath)
	return readme, program, err
}
