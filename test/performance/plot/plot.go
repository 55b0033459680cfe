// Package plot draws a performance run over time as a PNG, with gonum's
// plotting library: above, units pending and units admitted so far; below,
// units holding quota at each moment.
package plot

import (
	"fmt"
	"image/color"
	"os"

	gonumplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/koord-queue/koord-queue/test/performance/checker"
)

var (
	red  = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	blue = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	teal = color.RGBA{R: 0x17, G: 0xa0, B: 0x8c, A: 0xff}
)

type series struct {
	name  string
	value func(checker.Sample) int
	color color.Color
}

// Units writes the run's units over time to path (a .png).
func Units(res *checker.Result, path string) error {
	top, err := panel(res, fmt.Sprintf("%s: %d units, QPS %g, wall %.0fs", res.Scenario, res.Units, res.QPS, res.WallSeconds), "units", []series{
		{"pending", func(s checker.Sample) int { return s.Pending }, red},
		{"admitted so far", func(s checker.Sample) int { return s.Admitted }, blue},
	})
	if err != nil {
		return err
	}
	bottom, err := panel(res, "", "units holding quota", []series{
		{"holding quota", func(s checker.Sample) int { return s.Holding }, teal},
	})
	if err != nil {
		return err
	}
	bottom.X.Label.Text = "seconds since koord-queue started"

	width, height := 24*vg.Centimeter, 16*vg.Centimeter
	img := vgimg.New(width, height)
	dc := draw.New(img)
	canvases := gonumplot.Align([][]*gonumplot.Plot{{top}, {bottom}}, draw.Tiles{
		Rows: 2, Cols: 1, PadY: vg.Millimeter * 2,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4,
	}, dc)
	top.Draw(canvases[0][0])
	bottom.Draw(canvases[1][0])

	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

func panel(res *checker.Result, title, yLabel string, lines []series) (*gonumplot.Plot, error) {
	p := gonumplot.New()
	p.Title.Text = title
	p.Y.Label.Text = yLabel
	p.Y.Min = 0
	p.X.Min = 0
	p.Add(plotter.NewGrid())
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs, p.Legend.YOffs = vg.Millimeter*2, -vg.Millimeter
	// Headroom above the highest line keeps the legend off the data.
	highest := 1
	for _, l := range lines {
		for _, s := range res.Samples {
			highest = max(highest, l.value(s))
		}
	}
	p.Y.Max = 1.25 * float64(highest)
	for _, l := range lines {
		xys := make(plotter.XYs, len(res.Samples))
		for i, s := range res.Samples {
			xys[i] = plotter.XY{X: s.AtSeconds, Y: float64(l.value(s))}
		}
		line, err := plotter.NewLine(xys)
		if err != nil {
			return nil, fmt.Errorf("plotting %s: %w", l.name, err)
		}
		line.Color = l.color
		line.Width = vg.Points(1.5)
		p.Add(line)
		p.Legend.Add(l.name, line)
	}
	return p, nil
}
