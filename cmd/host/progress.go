package main

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/toolhost/toolhost/extism"
)

// compileProgress tells the user why a first run waits: compiling a Go-built
// wasm module takes seconds, once, and then comes from the cache directory.
// On a terminal it keeps one status line on stderr up to date while modules
// compile and leaves a one-line summary; otherwise it logs that summary at
// info. Compilations read from the cache are not worth a word and are not
// counted.
type compileProgress struct {
	w     io.Writer     // stderr, on a terminal; nil to log instead
	log   hclog.Logger  // where the summary goes without a terminal
	every time.Duration // how often the terminal line is redrawn

	mu      sync.Mutex
	held    int // hold calls not yet released: the burst goes on
	pending int // compilations running in this burst
	total   int // compilations started in this burst
	failed  int
	current string // the tool whose compilation started last
	start   time.Time
	stop    chan struct{} // stops the redraw of this burst
	drawn   bool
}

func newCompileProgress(w io.Writer, log hclog.Logger) *compileProgress {
	return &compileProgress{w: w, log: log, every: 200 * time.Millisecond}
}

// hold keeps one burst going until release, so that the modules a host
// compiles one after another while it loads are reported together.
func (p *compileProgress) hold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held++
}

// release ends a hold.
func (p *compileProgress) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held > 0 {
		p.held--
		p.maybeFinish()
	}
}

// event is the adapter's OnCompile hook.
func (p *compileProgress) event(ev extism.CompileEvent) {
	if ev.Cached {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !ev.Done {
		if p.pending == 0 && p.total == 0 {
			p.start = time.Now()
			if p.w != nil {
				p.stop = make(chan struct{})
				go p.redraw(p.stop)
			}
		}
		p.pending++
		p.total++
		p.current = ev.Tool
		return
	}
	if p.pending == 0 {
		return // started before this hook was installed
	}
	p.pending--
	if ev.Err != nil {
		p.failed++
	}
	p.maybeFinish()
}

// maybeFinish ends the burst once nothing compiles and nothing holds it.
// p.mu is held.
func (p *compileProgress) maybeFinish() {
	if p.pending > 0 || p.held > 0 || p.total == 0 {
		return
	}
	if p.stop != nil {
		close(p.stop)
		p.stop = nil
	}
	p.finish()
	p.total, p.failed = 0, 0
}

// redraw keeps the status line current until stop closes.
func (p *compileProgress) redraw(stop chan struct{}) {
	t := time.NewTicker(p.every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			p.mu.Lock()
			if p.total > 0 {
				p.drawn = true
				fmt.Fprintf(p.w, "\r\033[KCompiling wasm modules (first run only): %s, %d done (%s)",
					p.current, p.total-p.pending, time.Since(p.start).Round(100*time.Millisecond))
			}
			p.mu.Unlock()
		}
	}
}

// finish reports a burst of compilations that has ended. p.mu is held.
func (p *compileProgress) finish() {
	took := time.Since(p.start).Round(10 * time.Millisecond)
	outcome := ""
	if p.failed > 0 {
		outcome = fmt.Sprintf(", %d failed", p.failed)
	}
	if p.w == nil {
		p.log.Info("compiled wasm modules (first run only: later runs read them from cache_dir)",
			"tools", p.total, "failed", p.failed, "duration", took)
		return
	}
	if !p.drawn && took < p.every {
		return // too quick to be worth a line
	}
	p.drawn = false
	fmt.Fprintf(p.w, "\r\033[KCompiled the wasm modules of %d tool%s in %s%s (first run only: later runs read them from cache_dir)\n",
		p.total, plural(p.total), took, outcome)
}
