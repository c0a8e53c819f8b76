//! Prints the preset table (what `satquic presets` shows).
fn main() {
    print!("{}", satquic_link::presets::table());
}
